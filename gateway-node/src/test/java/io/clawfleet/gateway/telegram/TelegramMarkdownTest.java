package io.clawfleet.gateway.telegram;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class TelegramMarkdownTest {

    @Test
    void emphasisCodeAndLinksBecomeTelegramHtml() {
        assertThat(TelegramMarkdown.toHtml("**bold**, __also__, *it*, _it too_, ~~gone~~ and `a < b`"))
                .isEqualTo("<b>bold</b>, <b>also</b>, <i>it</i>, <i>it too</i>, <s>gone</s> and <code>a &lt; b</code>");
        assertThat(TelegramMarkdown.toHtml("see [the docs](https://example.com/a?b=1&c=2)"))
                .isEqualTo("see <a href=\"https://example.com/a?b=1&amp;c=2\">the docs</a>");
    }

    @Test
    void textIsEscapedAndWhatIsNotMarkdownStaysAsTyped() {
        assertThat(TelegramMarkdown.toHtml("1 < 2 & \"quotes\" > 0")).isEqualTo("1 &lt; 2 &amp; &quot;quotes&quot; &gt; 0");
        assertThat(TelegramMarkdown.toHtml("snake_case_name and 2*3*4 and a * b")).isEqualTo("snake_case_name and 2*3*4 and a * b");
        assertThat(TelegramMarkdown.toHtml("[not a link](javascript:alert(1))")).isEqualTo("[not a link](javascript:alert(1))");
        assertThat(TelegramMarkdown.toHtml("<b>not a tag</b>")).isEqualTo("&lt;b&gt;not a tag&lt;/b&gt;");
    }

    @Test
    void codeBlocksHeadingsAndBulletsKeepTheirShape() {
        assertThat(TelegramMarkdown.toHtml("# Title\n- one\n  * two\n\n```python\nif a < b:\n    print(\"**x**\")\n```\nend"))
                .isEqualTo("<b>Title</b>\n• one\n  • two\n\n<pre><code class=\"language-python\">if a &lt; b:\n"
                        + "    print(&quot;**x**&quot;)</code></pre>\nend");
        assertThat(TelegramMarkdown.toHtml("```\nnever closed")).isEqualTo("<pre>never closed</pre>");
        assertThat(TelegramMarkdown.toHtml("a\n---\nb")).isEqualTo("a\n---\nb");
    }
}
