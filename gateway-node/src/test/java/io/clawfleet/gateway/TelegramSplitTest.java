package io.clawfleet.gateway;

import io.clawfleet.gateway.telegram.TelegramSenderAccess;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class TelegramSplitTest {

    @Test
    void longRepliesAreSplitAtTelegramsLimitPreferringLineBreaks() {
        String line = "x".repeat(3000);
        List<String> parts = TelegramSenderAccess.split(line + "\n" + line + "\n" + line);
        assertThat(parts).hasSize(3).allSatisfy(part -> assertThat(part).hasSizeLessThanOrEqualTo(4096));
        assertThat(String.join("\n", parts)).isEqualTo(line + "\n" + line + "\n" + line);
    }

    @Test
    void aLongLineWithoutBreaksIsCutAtTheLimit() {
        List<String> parts = TelegramSenderAccess.split("y".repeat(9000));
        // each part keeps 40 characters of room to close and reopen a code block
        assertThat(parts).extracting(String::length).containsExactly(4056, 4056, 888);
    }

    @Test
    void aParagraphIsPreferredToALineAndALineToASentence() {
        String paragraph = "a".repeat(2500) + "\n\n" + "b".repeat(1000) + "\n" + "c".repeat(1000);
        List<String> parts = TelegramSenderAccess.split(paragraph);
        assertThat(parts.get(0)).isEqualTo("a".repeat(2500));
        assertThat(parts.get(1)).startsWith("b").contains("\n");
    }

    @Test
    void withoutLineBreaksTheCutIsAtASentenceThenAWord() {
        String sentence = "Word ".repeat(500) + "end. " + "More words here ".repeat(200);
        List<String> bySentence = TelegramSenderAccess.split(sentence);
        assertThat(bySentence.get(0)).endsWith("end.").hasSizeLessThanOrEqualTo(4096);
        assertThat(bySentence.get(1)).startsWith("More");
        List<String> byWord = TelegramSenderAccess.split("word ".repeat(1000).strip());
        assertThat(byWord).allSatisfy(part -> assertThat(part).hasSizeLessThanOrEqualTo(4096).doesNotEndWith(" ")
                .matches("(word ?)+"));
    }

    @Test
    void aSurrogatePairIsNeverCutInTwo() {
        String emoji = "\uD83D\uDE00";
        List<String> parts = TelegramSenderAccess.split("x" + emoji.repeat(3000));
        assertThat(parts).allSatisfy(part -> {
            assertThat(Character.isHighSurrogate(part.charAt(part.length() - 1))).isFalse();
            assertThat(Character.isLowSurrogate(part.charAt(0))).isFalse();
        });
        assertThat(String.join("", parts)).isEqualTo("x" + emoji.repeat(3000));
    }

    @Test
    void aCodeBlockCutInTwoIsClosedAndOpenedAgain() {
        String code = "```java\n" + "int x = 1;\n".repeat(600) + "```\nafter";
        List<String> parts = TelegramSenderAccess.split(code);
        assertThat(parts).hasSizeGreaterThan(1).allSatisfy(part -> {
            assertThat(part).hasSizeLessThanOrEqualTo(4096);
            assertThat(part.lines().filter(line -> line.startsWith("```")).count()).as(part).isEven();
        });
        assertThat(parts.get(0)).startsWith("```java\n").endsWith("\n```");
        assertThat(parts.get(1)).startsWith("```java\nint x = 1;");
        assertThat(parts.get(parts.size() - 1)).endsWith("```\nafter");
    }
}
