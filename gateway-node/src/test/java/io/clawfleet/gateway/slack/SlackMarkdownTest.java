package io.clawfleet.gateway.slack;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The model's Markdown as Slack {@code mrkdwn}: what becomes formatting, and what stays as typed. */
class SlackMarkdownTest {

    @Test
    void emphasisBecomesSlacksOwn() {
        assertThat(SlackMarkdown.toMrkdwn("**bold**, __also bold__, *lean*, _lean too_ and ~~gone~~"))
                .isEqualTo("*bold*, *also bold*, _lean_, _lean too_ and ~gone~");
    }

    @Test
    void linksHeadingsAndBulletsAreSlacksAndOnlyHttpLinksAreLinks() {
        assertThat(SlackMarkdown.toMrkdwn("# Title\n- one\n* two\nsee [the docs](https://example.com/x?a=1&b=2) or [this](javascript:alert(1))"))
                .isEqualTo("*Title*\n• one\n• two\nsee <https://example.com/x?a=1&amp;b=2|the docs> or [this](javascript:alert(1))");
    }

    @Test
    void controlCharactersAreEscapedSoTextCannotMentionOrLink() {
        assertThat(SlackMarkdown.toMrkdwn("<!channel> <@U123> a < b && c > d <http://evil|click>"))
                .isEqualTo("&lt;!channel&gt; &lt;@U123&gt; a &lt; b &amp;&amp; c &gt; d &lt;http://evil|click&gt;");
    }

    @Test
    void codeIsLeftAloneButEscapedAndABlockLosesItsLanguage() {
        assertThat(SlackMarkdown.toMrkdwn("run `a **b** <c>` then\n```python\nif a < b and **c**:\n    pass\n```\ndone"))
                .isEqualTo("run `a **b** &lt;c&gt;` then\n```\nif a &lt; b and **c**:\n    pass\n```\ndone");
        assertThat(SlackMarkdown.toMrkdwn("```\nnever closed")).isEqualTo("```\nnever closed\n```");
    }

    @Test
    void whatIsNotMarkdownStaysAsTyped() {
        assertThat(SlackMarkdown.toMrkdwn("snake_case_name, 2*3*4, a * b, ---")).isEqualTo("snake_case_name, 2*3*4, a * b, ---");
    }

    @Test
    void chatKeysNameTheThreadOrTheDirectMessage() {
        assertThat(SlackChat.of(7, "D1", "1.000001", null).chatKey()).isEqualTo("7:D1");
        assertThat(SlackChat.of(7, "D1", "1.000002", "1.000001").chatKey()).isEqualTo("7:D1:1.000001");
        assertThat(SlackChat.of(7, "C1", "1.000003", null).chatKey()).isEqualTo("7:C1:1.000003");
        assertThat(SlackChat.parse("7:C1:1.000003")).isEqualTo(new SlackChat(7, "C1", "1.000003"));
        assertThat(SlackChat.parse("7:D1")).isEqualTo(new SlackChat(7, "D1", null));
        assertThat(SlackChat.parse("x:D1")).isNull();
        assertThat(SlackChat.parse("7:")).isNull();
        assertThat(io.clawfleet.shared.message.Channels.isGroup("slack", "7:D1")).isFalse();
        assertThat(io.clawfleet.shared.message.Channels.isGroup("slack", "7:C1:1.000003")).isTrue();
        assertThat(io.clawfleet.shared.message.Channels.isGroup("slack", "7:G1:1.000003")).isTrue();
    }
}
