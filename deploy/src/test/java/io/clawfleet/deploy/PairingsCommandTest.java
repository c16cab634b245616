package io.clawfleet.deploy;

import io.clawfleet.gateway.GatewayRole;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code clawfleet pairings list|approve}: a sender waiting with a code is listed, approved once, then allowed. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PairingsCommandTest {

    private static final String KEY = "cli-pairings-key-0123456789abcdef";

    private NodeRuntime node;
    private Database database;
    private String url;

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY)), db, List.of(GatewayRole::new));
        url = "http://127.0.0.1:" + node.httpPort();
        database = Database.connect(node.vertx(), db, 1, 5_000);
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(node.stop(), Duration.ofSeconds(60));
    }

    /** Runs the command; returns its exit code and what it printed. */
    private Object[] pairings(String... args) {
        String[] full = Stream.concat(Stream.concat(Stream.of("pairings"), Arrays.stream(args)), Stream.of("--url", url, "--api-key", KEY))
                .toArray(String[]::new);
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            int code = Main.commandLine().execute(full);
            return new Object[] {code, printed.toString(StandardCharsets.UTF_8)};
        } finally {
            System.setOut(out);
        }
    }

    @Test
    void aWaitingSenderIsListedThenApprovedOnce() {
        // given a channel account of the default tenant, and a sender waiting with a code (as a stranger's message makes it)
        long channel = result(database.pool().query("""
                INSERT INTO channel_bots (tenant_id, channel, name, token, token_hash, api_url, dm_policy)
                VALUES ('default', 'telegram', 'cli_bot', '1:cli', 'cli-token', 'http://127.0.0.1:9', 'pairing') RETURNING id""")
                .execute()).iterator().next().getLong(0);
        result(database.pool().preparedQuery("""
                INSERT INTO channel_senders (channel_bot_id, tenant_id, bot_id, sender_id, status, code, code_expires_at, chat_id)
                VALUES ($1, 'default', 'main', '777', 'pending', 'HJKM-NPQR', now() + interval '1 hour', '777')""")
                .execute(Tuple.of(channel)));
        // when listed / then the code, its sender and chat are shown
        Object[] listed = pairings("list");
        assertThat(listed[0]).isEqualTo(0);
        assertThat((String) listed[1]).contains("HJKM-NPQR").contains("sender 777").contains("channel " + channel);
        // when approved (typed loosely) / then the sender is allowed, and the code is spent
        Object[] approved = pairings("approve", "hjkmnpqr");
        assertThat(approved[0]).isEqualTo(0);
        assertThat((String) approved[1]).contains("approved: sender 777");
        assertThat(result(database.pool().preparedQuery("SELECT status FROM channel_senders WHERE channel_bot_id = $1 AND sender_id = '777'")
                .execute(Tuple.of(channel))).iterator().next().getString(0)).isEqualTo("allowed");
        assertThat(pairings("approve", "HJKM-NPQR")[0]).isEqualTo(1);
        assertThat((String) pairings("list")[1]).contains("no pairing codes waiting");
    }
}
