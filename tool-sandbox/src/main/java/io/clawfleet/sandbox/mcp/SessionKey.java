package io.clawfleet.sandbox.mcp;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Whose warm MCP session it is and what process it runs: a session is never shared between tenants or bots, and
 * any change to what defines the server's process (a changed {@code .mcp.json} entry, another value of a variable,
 * egress granted or not) is another key, so a call never reaches a server started for something else; the old
 * session idles out.
 *
 * @param server      the server's name in {@code .mcp.json}
 * @param fingerprint SHA-256 (hex) over the command and arguments, the names and values of the environment the
 *                    server gets, and whether it gets egress; values are only ever kept hashed
 */
public record SessionKey(String tenantId, String botId, String server, String fingerprint) {

    public SessionKey {
        Objects.requireNonNull(tenantId, "tenantId");
        Objects.requireNonNull(botId, "botId");
        Objects.requireNonNull(server, "server");
        Objects.requireNonNull(fingerprint, "fingerprint");
    }

    /**
     * @param argv    the command and its arguments
     * @param env     the environment the server is given (besides what every run gets)
     * @param network whether the server is granted egress (asked for and allowed by the node)
     */
    public static SessionKey of(String tenantId, String botId, String server, List<String> argv, Map<String, String> env, boolean network) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
        // Every part is counted and length-prefixed, so no two different processes hash the same bytes.
        feed(sha, "argv", argv.size());
        argv.forEach(arg -> feed(sha, arg, 0));
        feed(sha, "env", env.size());
        new TreeMap<>(env).forEach((name, value) -> {
            feed(sha, name, 0);
            feed(sha, value, 0);
        });
        feed(sha, "network", network ? 1 : 0);
        return new SessionKey(tenantId, botId, server, HexFormat.of().formatHex(sha.digest()));
    }

    private static void feed(MessageDigest sha, String text, int number) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        sha.update(ByteBuffer.allocate(8).putInt(bytes.length).putInt(number).array());
        sha.update(bytes);
    }

    /** Without the fingerprint: what logs say about a session. */
    @Override
    public String toString() {
        return "[tenant: " + tenantId + ", bot: " + botId + ", server: " + server + "]";
    }
}
