package io.clawfleet.gateway;

import io.clawfleet.gateway.TestGateway.Tenant;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operator's {@code storageBytes} limit on a real gateway (issue 14): a tenant's workspace files, all its bots',
 * may not grow past it; a write that would is 409 {@code limit_reached} and stores nothing, a write that does not grow
 * them passes, other tenants are unaffected, and a raised limit applies at once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StorageLimitTest {

    private static final String OPERATOR = "operator-key-storage-0123456789abc";
    private static final AtomicInteger TENANTS = new AtomicInteger();

    private TestGateway gateway;
    private GatewayClient client;

    @BeforeAll
    void start() {
        gateway = TestGateway.start(Map.of("nodeId", "gw-storage", "operatorKey", OPERATOR));
        client = gateway.client();
    }

    @AfterAll
    void stop() {
        gateway.stop();
    }

    /** A tenant with {@code limits}, its default files seeded (they count toward its storage). */
    private Tenant tenant(JsonObject limits) throws Exception {
        String id = "storage-" + TENANTS.incrementAndGet();
        Tenant tenant = gateway.tenant(id, id, limits);
        assertThat(client.call("GET", "/api/v1/workspace", tenant.key(), null).statusCode()).isEqualTo(200);
        return tenant;
    }

    /** The bytes the tenant's workspace files hold, as the database counts them. */
    private long used(Tenant t) {
        return (Long) gateway.value("SELECT coalesce(sum(octet_length(content)), 0) FROM workspace_files WHERE tenant_id = $1",
                t.id());
    }

    private HttpResponse<String> put(Tenant t, String path, String content) throws Exception {
        return client.call("PUT", "/api/v1/workspace/files/" + path, t.key(), new JsonObject().put("content", content));
    }

    private HttpResponse<String> put(Tenant t, String path, String content, long version) throws Exception {
        return client.call("PUT", "/api/v1/workspace/files/" + path, t.key(), new JsonObject().put("content", content)
                .put("version", version));
    }

    private static void assertLimitReached(HttpResponse<String> response) {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(409);
        assertThat(new JsonObject(response.body()).getJsonObject("error").getString("code")).isEqualTo("limit_reached");
    }

    @Test
    void aTenantThatFilledItsStorageIsRefusedUntilItShrinksAFileOrTheLimitIsRaised() throws Exception {
        // given a tenant with 100,000 bytes, filled but for 1,000
        Tenant t = tenant(new JsonObject().put("storageBytes", 100_000));
        long room = 100_000 - used(t);
        assertThat(put(t, "notes/a.md", "a".repeat((int) room - 1_000)).statusCode()).isEqualTo(201);
        long full = used(t);

        // when it writes a new file of 2,000 bytes / then 409 naming the limit, the use and the size asked; nothing stored
        HttpResponse<String> refused = put(t, "notes/b.md", "b".repeat(2_000));
        assertLimitReached(refused);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("message"))
                .contains("'storageBytes'", "at most 100000 bytes", "hold " + full + " bytes", "'notes/b.md' would take 2000 bytes");
        assertThat(client.call("GET", "/api/v1/workspace/files/notes/b.md", t.key(), null).statusCode()).isEqualTo(404);
        // every write that grows the files is refused alike: an overwrite, one over a version, a create-only one
        assertLimitReached(put(t, "notes/a.md", "a".repeat((int) room + 1)));
        assertLimitReached(put(t, "notes/a.md", "a".repeat((int) room + 1), 1));
        assertLimitReached(put(t, "notes/c.md", "c".repeat(1_001), 0));
        assertThat(used(t)).isEqualTo(full);
        assertThat(new JsonObject(client.call("GET", "/api/v1/workspace/files/notes/a.md", t.key(), null).body())
                .getLong("version")).isEqualTo(1L);

        // a write up to the limit exactly passes, and one that shrinks a file frees room for the next
        assertThat(put(t, "notes/a.md", "a".repeat((int) room)).statusCode()).isEqualTo(200);
        assertThat(used(t)).isEqualTo(100_000);
        assertThat(put(t, "notes/a.md", "a".repeat((int) room - 3_000), 2).statusCode()).isEqualTo(200);
        assertThat(put(t, "notes/b.md", "b".repeat(2_000)).statusCode()).isEqualTo(201);

        // another bot's files count toward the same limit
        assertThat(client.call("POST", "/api/v1/bots", t.key(), new JsonObject().put("id", "second")).statusCode()).isEqualTo(201);
        assertLimitReached(client.call("PUT", "/api/v1/bots/second/workspace/files/x.md", t.key(),
                new JsonObject().put("content", "x".repeat(50_000))));

        // when the operator raises the limit / then the write passes
        assertThat(client.call("PATCH", "/admin/v1/tenants/" + t.id(), OPERATOR,
                new JsonObject().put("limits", new JsonObject().put("storageBytes", 1_000_000))).statusCode()).isEqualTo(200);
        assertThat(client.call("PUT", "/api/v1/bots/second/workspace/files/x.md", t.key(),
                new JsonObject().put("content", "x".repeat(50_000))).statusCode()).isEqualTo(201);
    }

    @Test
    void anotherTenantIsNotLimitedByAFullOne() throws Exception {
        Tenant full = tenant(new JsonObject().put("storageBytes", 1));
        Tenant free = tenant(new JsonObject());
        Tenant roomy = tenant(new JsonObject().put("storageBytes", 1_000_000_000_000L));
        assertLimitReached(put(full, "x.md", "x"));
        assertThat(put(free, "x.md", "x".repeat(500_000)).statusCode()).isEqualTo(201);
        assertThat(put(roomy, "x.md", "x".repeat(500_000)).statusCode()).isEqualTo(201);
        // a write that keeps the size of a file passes even over the limit (the seeded defaults exceed 1 byte)
        String identity = new JsonObject(client.call("GET", "/api/v1/workspace/files/IDENTITY.md", full.key(), null).body())
                .getString("content");
        assertThat(put(full, "IDENTITY.md", identity.substring(1) + "!").statusCode()).isEqualTo(200);
        assertLimitReached(put(full, "IDENTITY.md", identity + "!"));
    }

    @Test
    void concurrentWritesCannotPassTheLimitTogether() throws Exception {
        // given room for exactly 3 files of 10,000 bytes
        Tenant t = tenant(new JsonObject());
        long limit = used(t) + 30_000;
        assertThat(client.call("PATCH", "/admin/v1/tenants/" + t.id(), OPERATOR,
                new JsonObject().put("limits", new JsonObject().put("storageBytes", limit))).statusCode()).isEqualTo(200);
        // when 10 new files are written at once
        List<CompletableFuture<Integer>> writes = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            String path = "parallel/" + i + ".md";
            writes.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return put(t, path, "p".repeat(10_000)).statusCode();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        List<Integer> statuses = writes.stream().map(CompletableFuture::join).toList();
        // then 3 are stored and 7 refused, and the files hold the limit exactly
        assertThat(statuses).filteredOn(s -> s == 201).hasSize(3);
        assertThat(statuses).filteredOn(s -> s == 409).hasSize(7);
        assertThat(used(t)).isEqualTo(limit);
    }

    @Test
    void theLimitIsAWholeNumberOfBytesUpToATrillion() throws Exception {
        for (Object bad : List.of(1_000_000_000_001L, -1, "5")) {
            HttpResponse<String> refused = client.call("POST", "/admin/v1/tenants", OPERATOR,
                    new JsonObject().put("name", "x").put("limits", new JsonObject().put("storageBytes", bad)));
            assertThat(refused.statusCode()).as(String.valueOf(bad)).isEqualTo(400);
        }
        Tenant t = tenant(new JsonObject().put("storageBytes", 1_000_000_000_000L));
        JsonObject tenant = new JsonObject(client.call("GET", "/admin/v1/tenants/" + t.id(), OPERATOR, null).body());
        assertThat(tenant.getJsonObject("tenant").getJsonObject("limits").getLong("storageBytes")).isEqualTo(1_000_000_000_000L);
    }
}
