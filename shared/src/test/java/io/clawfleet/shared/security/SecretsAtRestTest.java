package io.clawfleet.shared.security;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestSecrets;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Tenant secrets at rest (issue 14): sealed in the database, opened only with the right master key. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecretsAtRestTest {

    private Vertx vertx;
    private Database database;
    private Pool pool;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(4), 4, 5_000);
        pool = database.pool();
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    @Test
    void aRegisteredBotsTokenIsNowhereInTheDatabaseButOpensForTheGateway() {
        // given a tenant that registers a bot with a canary token
        String tenant = tenant();
        String canary = "CANARY" + UUID.randomUUID().toString().replace("-", "");
        String token = "987654:" + canary;
        ChannelBotStore bots = new ChannelBotStore(pool, TestSecrets.tenantKeys(pool));
        ChannelBot bot = result(bots.register(BotRef.main(tenant), "telegram", "canary_bot", token, "http://127.0.0.1:1"));

        // then the gateway reads the token back, even through a store that has opened nothing yet
        assertThat(bot.token()).isEqualTo(token);
        assertThat(result(new ChannelBotStore(pool, TestSecrets.tenantKeys(pool)).get(bot.id())).orElseThrow().token())
                .isEqualTo(token);
        assertThat(bot.tokenHint()).isEqualTo("987654:…" + canary.substring(canary.length() - 4));
        // and no row of any table holds the canary, as text or as bytes
        assertThat(rowsContaining(canary)).isEmpty();
    }

    @Test
    void withoutAMasterKeyNothingIsStoredAndEncryptedRowsStopTheStartNamingTheSetting() {
        // given encrypted secrets in the database
        String tenant = tenant();
        result(new ChannelBotStore(pool, TestSecrets.tenantKeys(pool)).register(BotRef.main(tenant), "telegram", "b", token(), "http://127.0.0.1:1"));
        TenantKeys noKey = new TenantKeys(pool, MasterKeys.none());

        // then a node without a master key refuses to start, and cannot store a new secret in plaintext
        assertThatThrownBy(() -> result(noKey.verify())).hasMessageContaining("CLAWFLEET_MASTER_KEY")
                .hasMessageContaining(TestSecrets.masterKeys().current().id());
        assertThatThrownBy(() -> result(new ChannelBotStore(pool, noKey).register(BotRef.main(tenant()), "telegram", "c", token(), "http://x")))
                .isInstanceOf(SecretException.class).hasMessageContaining("CLAWFLEET_MASTER_KEY");
    }

    @Test
    void aWrongMasterKeyStopsTheStartNamingTheKeyIdAndChangesNothing() {
        // given encrypted secrets under the test master key
        String tenant = tenant();
        ChannelBot bot = result(new ChannelBotStore(pool, TestSecrets.tenantKeys(pool)).register(BotRef.main(tenant), "telegram", "b", token(),
                "http://127.0.0.1:1"));
        String before = dump(tenant);
        MasterKeys wrong = MasterKeys.of(List.of(MasterKeys.decode(MasterKeys.generate(), "wrong")));

        // when a node has another master key
        TenantKeys keys = new TenantKeys(pool, wrong);

        // then it refuses, naming the key the data is wrapped by, opens nothing, and writes nothing
        assertThatThrownBy(() -> result(keys.verify())).hasMessageContaining(TestSecrets.masterKeys().current().id())
                .hasMessageContaining("CLAWFLEET_MASTER_KEY_PREVIOUS");
        assertThatThrownBy(() -> result(new ChannelBotStore(pool, keys).get(bot.id()))).isInstanceOf(SecretException.class);
        assertThat(dump(tenant)).isEqualTo(before);
    }

    @Test
    void aSealedTokenMovedToAnotherTenantsBotDoesNotOpen() {
        // given two tenants' bots
        ChannelBotStore bots = new ChannelBotStore(pool, TestSecrets.tenantKeys(pool));
        ChannelBot a = result(bots.register(BotRef.main(tenant()), "telegram", "a", token(), "http://127.0.0.1:1"));
        ChannelBot b = result(bots.register(BotRef.main(tenant()), "telegram", "b", token(), "http://127.0.0.1:1"));

        // when someone with database access copies A's sealed token onto B's bot
        result(pool.preparedQuery("UPDATE channel_bots SET token_enc = (SELECT token_enc FROM channel_bots WHERE id = $1) WHERE id = $2")
                .execute(Tuple.of(a.id(), b.id())));

        // then B's token does not open (it is bound to A's tenant)
        assertThatThrownBy(() -> result(new ChannelBotStore(pool, TestSecrets.tenantKeys(pool)).get(b.id())))
                .isInstanceOf(SecretException.class).hasMessageContaining(b.tenantId());
    }

    @Test
    void tokensStoredInPlaintextAreSealedAndCleared() {
        // given a bot written before a master key was configured
        String tenant = tenant();
        String token = token();
        result(pool.preparedQuery("""
                        INSERT INTO channel_bots (tenant_id, channel, name, token, token_hash, api_url)
                        VALUES ($1, 'telegram', 'old_bot', $2, $3, 'http://127.0.0.1:1') RETURNING id""")
                .execute(Tuple.of(tenant, token, UUID.randomUUID().toString())));
        ChannelBotStore bots = new ChannelBotStore(pool, TestSecrets.tenantKeys(pool));

        // when a gateway with a master key starts
        assertThat(result(bots.sealPlaintext(1))).isGreaterThanOrEqualTo(1);

        // then the plaintext is gone and the token still opens
        assertThat(result(bots.countPlaintext())).isZero();
        assertThat(rowsContaining(token.substring(token.indexOf(':') + 1))).isEmpty();
        assertThat(result(bots.list(BotRef.main(tenant)))).singleElement().satisfies(bot -> {
            assertThat(bot.token()).isEqualTo(token);
            assertThat(bot.tokenHint()).isEqualTo(ChannelBotStore.hint(token));
        });
    }

    /** "table: row" for every row of every table whose text form holds the value, as text or as hex bytes. */
    private List<String> rowsContaining(String value) {
        String hex = HexFormat.of().formatHex(value.getBytes(StandardCharsets.UTF_8));
        List<String> tables = new ArrayList<>();
        result(pool.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                + "AND table_type = 'BASE TABLE'").execute()).forEach(row -> tables.add(row.getString(0)));
        assertThat(tables).contains("channel_bots", "tenant_data_keys", "audit_events");
        List<String> found = new ArrayList<>();
        for (String table : tables) {
            for (Row row : result(pool.preparedQuery("SELECT t::text FROM " + table + " t WHERE t::text LIKE $1 OR t::text LIKE $2")
                    .execute(Tuple.of("%" + value + "%", "%" + hex + "%")))) {
                found.add(table + ": " + row.getString(0));
            }
        }
        return found;
    }

    private String dump(String tenant) {
        List<String> rows = new ArrayList<>();
        for (String table : List.of("channel_bots", "tenant_data_keys")) {
            result(pool.preparedQuery("SELECT t::text FROM " + table + " t WHERE tenant_id = $1 ORDER BY 1").execute(Tuple.of(tenant)))
                    .forEach(row -> rows.add(row.getString(0)));
        }
        return String.join("\n", rows);
    }

    private String tenant() {
        String id = "s-" + UUID.randomUUID().toString().substring(0, 8);
        result(pool.preparedQuery("INSERT INTO tenants (id, name) VALUES ($1, $1)").execute(Tuple.of(id)));
        return id;
    }

    private static String token() {
        return "4242:" + UUID.randomUUID().toString().replace("-", "");
    }
}
