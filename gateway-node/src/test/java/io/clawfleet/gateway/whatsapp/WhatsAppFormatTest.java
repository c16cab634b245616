package io.clawfleet.gateway.whatsapp;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The model's Markdown in WhatsApp's marks: what becomes a mark, and what stays as typed. */
class WhatsAppFormatTest {

    @Test
    void emphasisLinksHeadingsAndBulletsBecomeWhatsAppsMarks() {
        assertThat(WhatsAppFormat.fromMarkdown("## Plan\n- **first**, *then*\n+ ~~never~~ see [docs](https://example.com/a_b*c)"))
                .isEqualTo("*Plan*\n• *first*, _then_\n• ~never~ see docs (https://example.com/a_b*c)");
    }

    @Test
    void codeStaysAsTypedAndABlockLosesItsLanguage() {
        assertThat(WhatsAppFormat.fromMarkdown("run `**x**`:\n```sh\necho *hi*\n```")).isEqualTo("run `**x**`:\n```\necho *hi*\n```");
        assertThat(WhatsAppFormat.fromMarkdown("```\nopen")).isEqualTo("```\nopen\n```");
    }

    @Test
    void whatIsNotMarkdownStaysAsTyped() {
        assertThat(WhatsAppFormat.fromMarkdown("snake_case_name, 2*3*4, <b>, a & b, ---")).isEqualTo("snake_case_name, 2*3*4, <b>, a & b, ---");
    }
}
