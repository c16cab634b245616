package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.workspace.DefaultWorkspace;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The workspace store's contract on embedded PostgreSQL; every test has a tenant of its own. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WorkspaceStoreTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();

    private Vertx vertx;
    private Database database;
    private TenantStore tenants;
    private WorkspaceStore store;
    private String tenant;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(16), 8, 5_000);
        tenants = new TenantStore(database.pool());
        store = new WorkspaceStore(database.pool());
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    @BeforeEach
    void newTenant() {
        tenant = "ws" + TENANTS.incrementAndGet();
        result(tenants.ensure(tenant, "Tenant " + tenant, "key-" + tenant + "-0123456789abcdef"));
    }

    @Test
    void aNewFileHasVersionOneAndEveryWriteAddsOne() {
        WorkspaceFile created = result(store.write(BotRef.main(tenant), "notes/a.md", "one"));
        WorkspaceFile updated = result(store.write(BotRef.main(tenant), "notes/a.md", "two"));
        assertThat(created.version()).isEqualTo(1);
        assertThat(updated.version()).isEqualTo(2);
        assertThat(updated.updatedAt()).isAfterOrEqualTo(created.updatedAt());
        WorkspaceFile read = result(store.read(BotRef.main(tenant), "notes/a.md")).orElseThrow();
        assertThat(read.content()).isEqualTo("two");
        assertThat(read.version()).isEqualTo(2);
        assertThat(read.path()).isEqualTo("notes/a.md");
    }

    @Test
    void aMissingFileReadsEmpty() {
        assertThat(result(store.read(BotRef.main(tenant), "nothing.md"))).isEmpty();
    }

    @Test
    void pathsAreNormalizedByTheStore() {
        // given a write through a path with "." segments / then it is the same file as the canonical path
        assertThat(result(store.write(BotRef.main(tenant), "./notes/./b.md", "x")).path()).isEqualTo("notes/b.md");
        assertThat(result(store.read(BotRef.main(tenant), "notes/b.md"))).isPresent();
        assertThat(result(store.write(BotRef.main(tenant), "notes/b.md", "y")).version()).isEqualTo(2);
    }

    @Test
    void aBadPathFailsNamingTheProblemAndChangesNothing() {
        Throwable error = failure(store.write(BotRef.main(tenant), "../other-tenant/IDENTITY.md", "x"));
        assertThat(error).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'..'");
        assertThat(failure(store.read(BotRef.main(tenant), "/etc/passwd"))).hasMessageContaining("absolute");
        assertThat(failure(store.delete(BotRef.main(tenant), "a\\b"))).hasMessageContaining("backslash");
        assertThat(result(store.list(BotRef.main(tenant), ""))).isEmpty();
    }

    @Test
    void tenantsDoNotSeeEachOthersFiles() {
        result(store.write(BotRef.main(tenant), "secret.md", "mine"));
        String other = tenant + "-other";
        result(tenants.ensure(other, "Other", "key-" + other + "-0123456789abcdef"));
        assertThat(result(store.read(BotRef.main(other), "secret.md"))).isEmpty();
        assertThat(result(store.list(BotRef.main(other), ""))).isEmpty();
        assertThat(result(store.delete(BotRef.main(other), "secret.md"))).isFalse();
    }

    @Test
    void compareAndSetWritesOnlyAtTheExpectedVersion() {
        result(store.write(BotRef.main(tenant), "memory/MEMORY.md", "v1"));
        Optional<WorkspaceFile> won = result(store.writeIfVersion(BotRef.main(tenant), "memory/MEMORY.md", "v2", 1));
        Optional<WorkspaceFile> lost = result(store.writeIfVersion(BotRef.main(tenant), "memory/MEMORY.md", "stale", 1));
        assertThat(won).map(WorkspaceFile::version).contains(2L);
        assertThat(lost).isEmpty();
        assertThat(result(store.read(BotRef.main(tenant), "memory/MEMORY.md")).orElseThrow().content()).isEqualTo("v2");
        assertThat(result(store.writeIfVersion(BotRef.main(tenant), "missing.md", "x", 3))).isEmpty();
        assertThat(failure(store.writeIfVersion(BotRef.main(tenant), "x.md", "x", -1))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void versionZeroCreatesOnlyANewFile() {
        assertThat(result(store.writeIfVersion(BotRef.main(tenant), "new.md", "first", 0))).map(WorkspaceFile::version).contains(1L);
        assertThat(result(store.writeIfVersion(BotRef.main(tenant), "new.md", "second", 0))).isEmpty();
        assertThat(result(store.read(BotRef.main(tenant), "new.md")).orElseThrow().content()).isEqualTo("first");
    }

    @Test
    void deleteSaysWhetherThereWasAFile() {
        result(store.write(BotRef.main(tenant), "gone.md", "x"));
        assertThat(result(store.delete(BotRef.main(tenant), "./gone.md"))).isTrue();
        assertThat(result(store.delete(BotRef.main(tenant), "gone.md"))).isFalse();
        assertThat(result(store.read(BotRef.main(tenant), "gone.md"))).isEmpty();
        // a file written again after a delete starts over
        assertThat(result(store.write(BotRef.main(tenant), "gone.md", "y")).version()).isEqualTo(1);
    }

    @Test
    void listTakesAFolderAndSortsByPath() {
        for (String path : List.of("memory/b.md", "memory/a.md", "memory/deep/c.md", "memory.md", "memoryx/d.md", "IDENTITY.md")) {
            result(store.write(BotRef.main(tenant), path, "content of " + path));
        }
        assertThat(result(store.list(BotRef.main(tenant), ""))).extracting(WorkspaceFile::path)
                .containsExactly("IDENTITY.md", "memory.md", "memory/a.md", "memory/b.md", "memory/deep/c.md", "memoryx/d.md");
        assertThat(result(store.list(BotRef.main(tenant), "memory"))).extracting(WorkspaceFile::path)
                .containsExactly("memory/a.md", "memory/b.md", "memory/deep/c.md");
        assertThat(result(store.list(BotRef.main(tenant), "memory/"))).hasSize(3)
                .allSatisfy(f -> assertThat(f.content()).isEqualTo("content of " + f.path()));
        assertThat(result(store.list(BotRef.main(tenant), "memory/deep"))).extracting(WorkspaceFile::path).containsExactly("memory/deep/c.md");
        assertThat(result(store.list(BotRef.main(tenant), "mem"))).isEmpty();
        assertThat(failure(store.list(BotRef.main(tenant), "../x"))).hasMessageContaining("'..'");
    }

    @Test
    void entriesGiveSizeAndHashWithoutContent() throws Exception {
        result(store.write(BotRef.main(tenant), "a.md", "héllo"));
        WorkspaceEntry entry = result(store.entries(BotRef.main(tenant), "")).getFirst();
        assertThat(entry.path()).isEqualTo("a.md");
        assertThat(entry.size()).isEqualTo(6);
        assertThat(entry.version()).isEqualTo(1);
        assertThat(entry.sha256()).isEqualTo(HexFormat.of().formatHex(
                MessageDigest.getInstance("SHA-256").digest("héllo".getBytes(StandardCharsets.UTF_8))));
    }

    @Test
    void readAllReadsWhatExistsInOneCall() {
        result(store.write(BotRef.main(tenant), "IDENTITY.md", "me"));
        result(store.write(BotRef.main(tenant), "memory/MEMORY.md", "facts"));
        Map<String, WorkspaceFile> files = result(store.readAll(BotRef.main(tenant),
                List.of("IDENTITY.md", "./memory/MEMORY.md", "USER.md", "memory/MEMORY.md")));
        assertThat(files).containsOnlyKeys("IDENTITY.md", "memory/MEMORY.md");
        assertThat(files.get("memory/MEMORY.md").content()).isEqualTo("facts");
        assertThat(result(store.readAll(BotRef.main(tenant), List.of()))).isEmpty();
        assertThat(failure(store.readAll(BotRef.main(tenant), List.of("ok.md", "/abs")))).hasMessageContaining("absolute");
    }

    @Test
    void defaultsAreSeededOnceAndADeletedDefaultStaysDeleted() {
        // given a fresh tenant / when the defaults are ensured / then every default file is there at version 1
        assertThat(result(store.seedDefaults(BotRef.main(tenant)))).containsExactlyInAnyOrderElementsOf(DefaultWorkspace.paths());
        Map<String, WorkspaceFile> files = result(store.readAll(BotRef.main(tenant), DefaultWorkspace.paths()));
        assertThat(files).hasSize(DefaultWorkspace.paths().size());
        files.forEach((path, file) -> assertThat(file.content()).isEqualTo(DefaultWorkspace.files().get(path)));

        // when the tenant edits one and deletes another, then ensures the defaults again
        result(store.write(BotRef.main(tenant), WorkspacePaths.IDENTITY, "I am Rex."));
        result(store.delete(BotRef.main(tenant), WorkspacePaths.USER));
        result(store.ensureDefaults(BotRef.main(tenant)));

        // then nothing comes back and nothing is overwritten
        assertThat(result(store.seedDefaults(BotRef.main(tenant)))).isEmpty();
        assertThat(result(store.read(BotRef.main(tenant), WorkspacePaths.USER))).isEmpty();
        assertThat(result(store.read(BotRef.main(tenant), WorkspacePaths.IDENTITY)).orElseThrow().content()).isEqualTo("I am Rex.");
    }

    @Test
    void aFileTheTenantAlreadyHadIsNotOverwrittenBySeeding() {
        result(store.write(BotRef.main(tenant), WorkspacePaths.IDENTITY, "custom"));
        assertThat(result(store.seedDefaults(BotRef.main(tenant)))).doesNotContain(WorkspacePaths.IDENTITY).isNotEmpty();
        assertThat(result(store.read(BotRef.main(tenant), WorkspacePaths.IDENTITY)).orElseThrow().content()).isEqualTo("custom");
    }

    @Test
    void concurrentSeedingSeedsOnce() {
        // given eight nodes ensuring the defaults of the same new tenant at once
        List<Future<List<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            calls.add(store.seedDefaults(BotRef.main(tenant)));
        }
        result(Future.all(calls));
        // then exactly one of them seeded, and every file is at version 1
        assertThat(calls).filteredOn(call -> !call.result().isEmpty()).hasSize(1);
        assertThat(result(store.list(BotRef.main(tenant), ""))).hasSize(DefaultWorkspace.paths().size())
                .allSatisfy(file -> assertThat(file.version()).isEqualTo(1));
    }

    @Test
    void anUnknownTenantIsRefused() {
        assertThat(failure(store.seedDefaults(BotRef.main("no-such-tenant")))).hasMessageContaining("no bot 'no-such-tenant/main'");
        assertThat(failure(store.write(BotRef.main("no-such-tenant"), "a.md", "x"))).hasMessageContaining("no bot");
    }

    @Test
    void twoBotsOfOneTenantHaveWorkspacesOfTheirOwn() {
        // given a tenant with its bot main and a second bot
        BotRef main = BotRef.main(tenant);
        BotRef support = new BotRef(tenant, "support");
        assertThat(result(new BotStore(database.pool()).create(tenant, "support", "Support", new io.vertx.core.json.JsonObject())))
                .isPresent();
        // when each writes SOUL.md and support seeds its defaults
        result(store.write(main, "SOUL.md", "main's soul"));
        result(store.write(support, "SOUL.md", "support's soul"));
        assertThat(result(store.seedDefaults(support))).isNotEmpty();
        // then each reads its own file, lists only its own, and a bot of no tenant is refused
        assertThat(result(store.read(main, "SOUL.md")).orElseThrow().content()).isEqualTo("main's soul");
        assertThat(result(store.read(support, "SOUL.md")).orElseThrow().content()).isEqualTo("support's soul");
        result(store.delete(support, "SOUL.md"));
        assertThat(result(store.read(main, "SOUL.md"))).isPresent();
        assertThat(result(store.list(main, ""))).extracting(WorkspaceFile::path).containsExactly("SOUL.md");
        assertThat(failure(store.write(new BotRef(tenant, "nobody"), "a.md", "x"))).hasMessageContaining("no bot");
    }

    @Test
    void aFileMayHoldOneMebibyte() {
        String max = "x".repeat(WorkspaceStore.MAX_FILE_BYTES);
        assertThat(result(store.write(BotRef.main(tenant), "big.md", max)).version()).isEqualTo(1);
        assertThat(result(store.read(BotRef.main(tenant), "big.md")).orElseThrow().content()).hasSize(WorkspaceStore.MAX_FILE_BYTES);

        Throwable tooBig = failure(store.write(BotRef.main(tenant), "big.md", max + "x"));
        assertThat(tooBig).isInstanceOf(WorkspaceLimitException.class).hasMessageContaining("1 MiB").hasMessageContaining("big.md");
        // bytes count, not characters: half a million two-byte characters and one more is over
        Throwable multibyte = failure(store.write(BotRef.main(tenant), "accents.md", "é".repeat(WorkspaceStore.MAX_FILE_BYTES / 2 + 1)));
        assertThat(multibyte).isInstanceOf(WorkspaceLimitException.class);
        assertThat(result(store.read(BotRef.main(tenant), "big.md")).orElseThrow().version()).isEqualTo(1);
        assertThat(result(store.read(BotRef.main(tenant), "accents.md"))).isEmpty();
    }

    @Test
    void contentThatIsNotTextIsRefused() {
        assertThat(failure(store.write(BotRef.main(tenant), "bin.md", "a\u0000b"))).hasMessageContaining("NUL");
        assertThat(failure(store.write(BotRef.main(tenant), "bad.md", "a\uD800b"))).hasMessageContaining("unpaired surrogate");
        assertThat(failure(store.write(BotRef.main(tenant), "null.md", null))).hasMessageContaining("no content");
        assertThat(result(store.write(BotRef.main(tenant), "empty.md", "")).content()).isEmpty();
    }

    @Test
    void aWorkspaceHoldsAtMostTwoThousandFiles() {
        // given a workspace one file short of the limit
        fill(WorkspaceStore.MAX_FILES - 1);
        // when two more files are created / then the first fits and the second is refused
        assertThat(result(store.write(BotRef.main(tenant), "last.md", "x")).version()).isEqualTo(1);
        Throwable full = failure(store.write(BotRef.main(tenant), "one-too-many.md", "x"));
        assertThat(full).isInstanceOf(WorkspaceLimitException.class).hasMessageContaining("at most 2000 files");
        assertThat(failure(store.writeIfVersion(BotRef.main(tenant), "cas-new.md", "x", 0))).isInstanceOf(WorkspaceLimitException.class);
        // and existing files can still be changed, and a delete makes room
        assertThat(result(store.write(BotRef.main(tenant), "last.md", "y")).version()).isEqualTo(2);
        assertThat(result(store.writeIfVersion(BotRef.main(tenant), "last.md", "z", 2))).isPresent();
        result(store.delete(BotRef.main(tenant), "last.md"));
        assertThat(result(store.write(BotRef.main(tenant), "one-too-many.md", "x")).version()).isEqualTo(1);
    }

    @Test
    void concurrentCreatesNeverPassTheLimit() {
        // given room for five more files / when twenty different files are created at once
        fill(WorkspaceStore.MAX_FILES - 5);
        List<Future<WorkspaceFile>> writes = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            writes.add(store.write(BotRef.main(tenant), "race/" + i + ".md", "x"));
        }
        result(Future.join(writes).otherwiseEmpty());
        // then exactly five made it and the rest were refused as over the limit
        assertThat(writes).filteredOn(Future::succeeded).hasSize(5);
        assertThat(writes).filteredOn(Future::failed)
                .allSatisfy(write -> assertThat(write.cause()).isInstanceOf(WorkspaceLimitException.class));
        assertThat(result(store.entries(BotRef.main(tenant), ""))).hasSize(WorkspaceStore.MAX_FILES);
    }

    private void fill(int files) {
        result(database.pool().preparedQuery("""
                        INSERT INTO workspace_files (tenant_id, path, content)
                        SELECT $1, 'fill/' || n || '.md', '' FROM generate_series(1, $2) n""")
                .execute(Tuple.of(tenant, files)));
    }
}
