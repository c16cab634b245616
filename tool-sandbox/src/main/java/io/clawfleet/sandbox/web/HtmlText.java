package io.clawfleet.sandbox.web;

import org.jsoup.Jsoup;
import org.jsoup.nodes.Document;
import org.jsoup.nodes.Element;
import org.jsoup.nodes.Node;
import org.jsoup.nodes.TextNode;
import org.jsoup.select.NodeTraversor;
import org.jsoup.select.NodeVisitor;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/** The readable text of an HTML page: title, and the body's text with blocks on lines of their own. */
final class HtmlText {

    record Page(String title, String text) {
    }

    private HtmlText() {
    }

    /** @param charset from the Content-Type header, or null to let the page's own declaration decide */
    static Page of(byte[] html, String charset, String baseUri) {
        Document doc;
        try {
            doc = Jsoup.parse(new ByteArrayInputStream(html), charset, baseUri);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String title = doc.title().strip();
        doc.select("script, style, noscript, template, svg, iframe, object, embed, canvas").remove();
        StringBuilder out = new StringBuilder();
        NodeTraversor.traverse(new NodeVisitor() {
            @Override
            public void head(Node node, int depth) {
                if (node instanceof TextNode text) {
                    String words = text.text().replaceAll("\\s+", " ");
                    if (!words.isBlank()) {
                        if (!out.isEmpty() && out.charAt(out.length() - 1) != '\n' && out.charAt(out.length() - 1) != ' '
                                && !words.startsWith(" ")) {
                            out.append(' ');
                        }
                        out.append(words);
                    }
                } else if (node instanceof Element element) {
                    if (element.nameIs("br")) {
                        out.append('\n');
                    } else if (element.nameIs("li")) {
                        // The previous item's block end already broke the line; items stay on consecutive lines.
                        out.append(!out.isEmpty() && out.charAt(out.length() - 1) == '\n' ? "- " : "\n- ");
                    } else if (element.isBlock()) {
                        out.append('\n');
                    }
                }
            }

            @Override
            public void tail(Node node, int depth) {
                if (node instanceof Element element && element.isBlock() && !element.nameIs("li")) {
                    out.append('\n');
                }
            }
        }, doc.body() == null ? doc : doc.body());
        String text = out.toString().replaceAll("[ \\t]+\\n", "\n").replaceAll("\\n[ \\t]+", "\n").replaceAll("\\n{3,}", "\n\n")
                .strip();
        return new Page(title, text);
    }
}
