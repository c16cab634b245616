package io.clawfleet.deploy;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.security.TenantKeys;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code clawfleet secrets rotate-master} and the master key {@code up} makes (issue 14). */
class SecretsCommandTest {

    @TempDir
    Path dir;

    private Vertx vertx;
    private DbUrl url;
    private Database database;
    private Pool pool;
    private final String oldKey = MasterKeys.generate();
    private final String newKey = MasterKeys.generate();

    @BeforeEach
    void start() {
        vertx = Vertx.vertx();
        url = TestDatabases.freshMigrated(4);
        database = Database.connect(vertx, url, 2, 5_000);
        pool = database.pool();
    }

    @AfterEach
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    @Test
    void rotateMasterRewrapsEveryDataKeyWhileANodeHoldingBothKeysKeepsServing() throws Exception {
        // given two tenants' bots sealed under the old master key
        MasterKeys old = keys(oldKey);
        ChannelBotStore before = new ChannelBotStore(pool, new TenantKeys(pool, old));
        List<ChannelBot> bots = List.of(result(before.register(BotRef.main(tenant()), "telegram", "a", token(), "http://127.0.0.1:1")),
                result(before.register(BotRef.main(tenant()), "telegram", "b", token(), "http://127.0.0.1:1")));
        String sealedBefore = sealed();
        // and a node restarted for the rotation: the new key current, the old one previous
        Path newFile = dir.resolve("new.key");
        Files.writeString(newFile, "# new first\n" + newKey + "\n");
        MasterKeys both = MasterKeys.configured(newKey, null, List.of(oldKey));
        ChannelBotStore during = new ChannelBotStore(pool, new TenantKeys(pool, both));
        assertThat(result(during.get(bots.getFirst().id())).orElseThrow().token()).isEqualTo(bots.getFirst().token());

        // when the operator rotates with the old key configured
        assertThat(SecretsCommand.RotateMaster.rotate(url, old, newFile)).isZero();

        // then every data key is under the new key, the sealed tokens are untouched, and it is idempotent
        String newId = keys(newKey).current().id();
        assertThat(masterIds()).containsOnly(newId).hasSize(2);
        assertThat(sealed()).isEqualTo(sealedBefore);
        assertThat(SecretsCommand.RotateMaster.rotate(url, old, newFile)).isZero();
        // and the node holding both, a node holding only the new key, open every token; the old key alone does not
        for (ChannelBot bot : bots) {
            assertThat(result(during.get(bot.id())).orElseThrow().token()).isEqualTo(bot.token());
            assertThat(result(new ChannelBotStore(pool, new TenantKeys(pool, keys(newKey))).get(bot.id())).orElseThrow().token())
                    .isEqualTo(bot.token());
        }
        result(new TenantKeys(pool, keys(newKey)).verify());
        assertThatThrownBy(() -> result(new TenantKeys(pool, old).verify())).hasMessageContaining(newId);
    }

    @Test
    void aRotationWithoutTheOldKeyChangesNothingAndNamesTheKeyItNeeds() throws Exception {
        // given data keys under the old master key
        MasterKeys old = keys(oldKey);
        result(new ChannelBotStore(pool, new TenantKeys(pool, old)).register(BotRef.main(tenant()), "telegram", "a", token(), "http://127.0.0.1:1"));
        String stored = dataKeys();
        Path newFile = dir.resolve("new.key");
        Files.writeString(newFile, newKey + "\n");

        // when the old key is not given, or a wrong one is
        assertThatThrownBy(() -> SecretsCommand.RotateMaster.rotate(url, MasterKeys.none(), newFile))
                .isInstanceOf(SecretException.class).hasMessageContaining(old.current().id()).hasMessageContaining("Nothing was changed");

        // then nothing was changed
        assertThat(dataKeys()).isEqualTo(stored);
    }

    @Test
    void upMakesAnOwnerOnlyMasterKeyFileOnceAndKeepsIt() throws Exception {
        // when up starts twice on the same data folder
        Path file = UpCommand.masterKeyFile(dir);
        String first = Files.readString(file);
        Path again = UpCommand.masterKeyFile(dir);

        // then the file is owner-only, holds one valid key, and was not replaced
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        assertThat(MasterKeys.readFile(file)).hasSize(1);
        assertThat(Files.readString(again)).isEqualTo(first);
    }

    private static MasterKeys keys(String key) {
        return MasterKeys.configured(key, null, List.of());
    }

    private List<String> masterIds() {
        List<String> ids = new ArrayList<>();
        result(pool.query("SELECT master_key_id FROM tenant_data_keys").execute()).forEach(row -> ids.add(row.getString(0)));
        return ids;
    }

    private String sealed() {
        List<String> rows = new ArrayList<>();
        result(pool.query("SELECT id, token_enc FROM channel_bots ORDER BY id").execute())
                .forEach(row -> rows.add(row.getLong(0) + ":" + row.getBuffer(1)));
        return String.join(",", rows);
    }

    private String dataKeys() {
        List<String> rows = new ArrayList<>();
        result(pool.query("SELECT t::text FROM tenant_data_keys t ORDER BY 1").execute()).forEach(row -> rows.add(row.getString(0)));
        return String.join("\n", rows);
    }

    private String tenant() {
        String id = "r-" + UUID.randomUUID().toString().substring(0, 8);
        result(pool.preparedQuery("INSERT INTO tenants (id, name) VALUES ($1, $1)").execute(Tuple.of(id)));
        return id;
    }

    private static String token() {
        return "4242:" + UUID.randomUUID().toString().replace("-", "");
    }
}
