package io.clawfleet.gateway;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.WorkspaceChanged;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.shared.workspace.DefaultWorkspace;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The workspace API over real HTTP, on embedded PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WorkspaceApiTest {

    private static final String KEY = "workspace-key-0123456789abcdef";
    private static final String OTHER_KEY = "other-tenant-key-0123456789abcdef";
    private static final int MAX_BODY = 4_096;

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private String base;
    private final List<WorkspaceChanged> notices = new CopyOnWriteArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("apiKey", KEY, "nodeId", "gw-ws",
                "http.maxBodyBytes", Integer.toString(MAX_BODY))), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
        result(new TenantStore(database.pool()).ensure("other", "Other", OTHER_KEY));
        node.vertx().eventBus().<WorkspaceChanged>consumer(Addresses.WORKSPACE_CHANGED, m -> notices.add(m.body()));
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    private HttpResponse<String> send(String method, String path, String body, String key) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            request.header("content-type", "application/json");
        }
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws Exception {
        return send("GET", path, null, KEY);
    }

    private HttpResponse<String> put(String file, JsonObject body) throws Exception {
        return send("PUT", "/api/v1/workspace/files/" + file, body.encode(), KEY);
    }

    private static String errorCode(HttpResponse<String> response) {
        return new JsonObject(response.body()).getJsonObject("error").getString("code");
    }

    private static String errorMessage(HttpResponse<String> response) {
        return new JsonObject(response.body()).getJsonObject("error").getString("message");
    }

    private static String unique() {
        return "t-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Test
    void theDefaultTenantStartsWithTheDefaultFiles() throws Exception {
        HttpResponse<String> response = get("/api/v1/workspace");
        assertThat(response.statusCode()).isEqualTo(200);
        JsonArray files = new JsonObject(response.body()).getJsonArray("files");
        List<String> paths = files.stream().map(f -> ((JsonObject) f).getString("path")).toList();
        assertThat(paths).containsAll(DefaultWorkspace.paths());
        JsonObject identity = files.stream().map(JsonObject.class::cast).filter(f -> f.getString("path").equals("IDENTITY.md"))
                .findFirst().orElseThrow();
        assertThat(identity.getLong("size")).isEqualTo(DefaultWorkspace.files().get("IDENTITY.md").length());
        assertThat(identity.getString("updatedAt")).isNotBlank();
        assertThat(identity.getString("sha256")).hasSize(64);
    }

    @Test
    void aFileIsWrittenReadAndVersioned() throws Exception {
        String path = unique() + "/todo.md";
        HttpResponse<String> created = put(path, new JsonObject().put("content", "- milk"));
        HttpResponse<String> updated = put(path, new JsonObject().put("content", "- milk\n- eggs"));
        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(new JsonObject(created.body())).isEqualTo(new JsonObject().put("path", path).put("version", 1));
        assertThat(updated.statusCode()).isEqualTo(200);
        assertThat(new JsonObject(updated.body()).getLong("version")).isEqualTo(2);

        JsonObject read = new JsonObject(get("/api/v1/workspace/files/" + path).body());
        assertThat(read.getString("path")).isEqualTo(path);
        assertThat(read.getString("content")).isEqualTo("- milk\n- eggs");
        assertThat(read.getLong("version")).isEqualTo(2);
    }

    @Test
    void encodedCharactersInThePathAreDecodedOnce() throws Exception {
        // given a file name with a space, an accent and a literal "%2e" / when written through its encoded URL
        String dir = unique();
        HttpResponse<String> created = put(dir + "/my%20notes/d%C3%ADa%251.md", new JsonObject().put("content", "hola"));
        // then it is stored under the decoded name, and readable by the same URL
        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(new JsonObject(created.body()).getString("path")).isEqualTo(dir + "/my notes/día%1.md");
        assertThat(new JsonObject(get("/api/v1/workspace/files/" + dir + "/my%20notes/d%C3%ADa%251.md").body())
                .getString("content")).isEqualTo("hola");
    }

    @Test
    void aStaleVersionIsAConflict() throws Exception {
        String path = unique() + ".md";
        put(path, new JsonObject().put("content", "v1"));
        HttpResponse<String> won = put(path, new JsonObject().put("content", "v2").put("version", 1));
        HttpResponse<String> lost = put(path, new JsonObject().put("content", "stale").put("version", 1));
        HttpResponse<String> createOnly = put(path, new JsonObject().put("content", "again").put("version", 0));
        assertThat(won.statusCode()).isEqualTo(200);
        assertThat(lost.statusCode()).isEqualTo(409);
        assertThat(errorCode(lost)).isEqualTo("conflict");
        assertThat(errorMessage(lost)).contains("at version 2, not 1");
        assertThat(createOnly.statusCode()).isEqualTo(409);
        assertThat(new JsonObject(get("/api/v1/workspace/files/" + path).body()).getString("content")).isEqualTo("v2");
        assertThat(put(unique() + ".md", new JsonObject().put("content", "new").put("version", 0)).statusCode()).isEqualTo(201);
    }

    @Test
    void anInvalidSkillIsRefusedNamingTheProblem() throws Exception {
        String name = "s" + UUID.randomUUID().toString().substring(0, 8);
        HttpResponse<String> refused = put("skills/" + name + "/SKILL.md", new JsonObject().put("content", "---\nname: " + name + "\n---\nbody"));
        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(errorCode(refused)).isEqualTo("invalid_skill");
        assertThat(errorMessage(refused)).contains("skills/" + name + "/SKILL.md").contains("'description'");
        assertThat(get("/api/v1/workspace/files/skills/" + name + "/SKILL.md").statusCode()).isEqualTo(404);

        HttpResponse<String> accepted = put("skills/" + name + "/SKILL.md",
                new JsonObject().put("content", "---\nname: " + name + "\ndescription: does things\n---\nbody"));
        assertThat(accepted.statusCode()).isEqualTo(201);
        // other files in a skill's folder are not skill definitions
        assertThat(put("skills/" + name + "/notes.md", new JsonObject().put("content", "anything")).statusCode()).isEqualTo(201);
    }

    @ParameterizedTest
    @CsvSource({
            "..%2F..%2Fetc%2Fpasswd, '..'",
            "a%2F..%2F..%2Fb, '..'",
            "a%5Cb.md, backslash",
            "a%00b.md, NUL",
            "a%0Ab.md, control character",
            "a%2F%2Fb.md, empty segment",
            "%2Fetc%2Fpasswd, absolute",
    })
    void badPathsAreRefusedWith400NamingTheProblem(String encoded, String problem) throws Exception {
        for (String method : List.of("GET", "PUT", "DELETE")) {
            HttpResponse<String> response = send(method, "/api/v1/workspace/files/" + encoded,
                    method.equals("PUT") ? new JsonObject().put("content", "x").encode() : null, KEY);
            assertThat(response.statusCode()).as(method + " " + encoded).isEqualTo(400);
            assertThat(errorCode(response)).isEqualTo("invalid_path");
            assertThat(errorMessage(response)).contains(problem);
        }
    }

    @Test
    void dotSegmentsInTheUrlNeverReachAFileOutsideTheWorkspace() throws Exception {
        // The router resolves literal dot segments before routing: what is left is another route, or a 404.
        HttpResponse<String> response = get("/api/v1/workspace/files/../../../../etc/passwd");
        assertThat(response.statusCode()).isEqualTo(404);
        assertThat(response.body()).doesNotContain("root:");
        assertThat(get("/api/v1/workspace/files/").statusCode()).isEqualTo(400);
    }

    @Test
    void deleteRemovesAFileOnceAndADeletedDefaultStaysDeleted() throws Exception {
        String path = unique() + ".md";
        put(path, new JsonObject().put("content", "x"));
        assertThat(send("DELETE", "/api/v1/workspace/files/" + path, null, KEY).statusCode()).isEqualTo(204);
        assertThat(send("DELETE", "/api/v1/workspace/files/" + path, null, KEY).statusCode()).isEqualTo(404);
        assertThat(get("/api/v1/workspace/files/" + path).statusCode()).isEqualTo(404);

        // given the other tenant's workspace, seeded on first use / when it deletes a default
        assertThat(send("GET", "/api/v1/workspace/files/AGENTS.md", null, OTHER_KEY).statusCode()).isEqualTo(200);
        assertThat(send("DELETE", "/api/v1/workspace/files/AGENTS.md", null, OTHER_KEY).statusCode()).isEqualTo(204);
        // then serving the workspace again does not bring it back
        JsonArray files = new JsonObject(send("GET", "/api/v1/workspace", null, OTHER_KEY).body()).getJsonArray("files");
        assertThat(files.stream().map(f -> ((JsonObject) f).getString("path"))).doesNotContain("AGENTS.md").contains("IDENTITY.md");
    }

    @Test
    void tenantsSeeOnlyTheirOwnFiles() throws Exception {
        String path = unique() + "/secret.md";
        put(path, new JsonObject().put("content", "only mine"));
        assertThat(send("GET", "/api/v1/workspace/files/" + path, null, OTHER_KEY).statusCode()).isEqualTo(404);
        assertThat(send("GET", "/api/v1/workspace", null, OTHER_KEY).body()).doesNotContain(path);
    }

    @Test
    void everyChangeIsAnnounced() throws Exception {
        String path = unique() + "/n.md";
        put(path, new JsonObject().put("content", "x"));
        send("DELETE", "/api/v1/workspace/files/" + path, null, KEY);
        Await.until("two notices for " + path, Duration.ofSeconds(5),
                () -> notices.stream().filter(n -> n.path().equals(path) && n.tenantId().equals("default")).count() == 2);
    }

    @Test
    void aFileOfOneMebibyteFitsThoughTheGeneralBodyLimitIsSmaller() throws Exception {
        String path = unique() + "/big.md";
        String max = "y".repeat(WorkspaceStore.MAX_FILE_BYTES);
        assertThat(put(path, new JsonObject().put("content", max)).statusCode()).isEqualTo(201);
        assertThat(new JsonObject(get("/api/v1/workspace/files/" + path).body()).getString("content")).isEqualTo(max);

        HttpResponse<String> tooBig = put(path, new JsonObject().put("content", max + "y"));
        assertThat(tooBig.statusCode()).isEqualTo(413);
        assertThat(errorCode(tooBig)).isEqualTo("limit_exceeded");
        assertThat(errorMessage(tooBig)).contains("1 MiB");
        // the general limit still holds elsewhere
        assertThat(send("POST", "/api/v1/messages", "{\"text\":\"" + "z".repeat(MAX_BODY) + "\"}", KEY).statusCode()).isEqualTo(413);
    }

    @Test
    void badBodiesAreRefused() throws Exception {
        String path = unique() + ".md";
        assertThat(put(path, new JsonObject()).statusCode()).isEqualTo(400);
        assertThat(errorMessage(put(path, new JsonObject()))).contains("'content'");
        assertThat(errorMessage(put(path, new JsonObject().put("content", 5)))).contains("must be a string");
        assertThat(errorMessage(put(path, new JsonObject().put("content", "x").put("version", "1")))).contains("'version'");
        assertThat(errorMessage(put(path, new JsonObject().put("content", "x").put("version", -1)))).contains("'version'");
        assertThat(errorMessage(put(path, new JsonObject().put("content", "x").put("version", 1.5)))).contains("'version'");
        assertThat(errorMessage(put(path, new JsonObject().put("content", "x").put("mode", "append")))).contains("unknown field 'mode'");
        assertThat(put(path, new JsonObject().put("content", "a\u0000b")).statusCode()).isEqualTo(400);
        assertThat(get("/api/v1/workspace/files/" + path).statusCode()).isEqualTo(404);
        // an empty file is a file
        assertThat(put(path, new JsonObject().put("content", "")).statusCode()).isEqualTo(201);
    }

    @Test
    void theWorkspaceNeedsAnApiKey() throws Exception {
        assertThat(send("GET", "/api/v1/workspace", null, null).statusCode()).isEqualTo(401);
        assertThat(send("PUT", "/api/v1/workspace/files/x.md", "{\"content\":\"x\"}", "wrong-key").statusCode()).isEqualTo(401);
    }
}
