package io.clawfleet.deploy;

import io.clawfleet.shared.node.FreePorts;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The alert rules of deploy/observability (issue 17) against a real node: every rule is well formed, every series it
 * selects is one the node exports, and on a node whose model failed one turn of two, exactly the dead-letter and
 * error-budget alerts fire, the others staying quiet. (The expressions are evaluated by {@link PromQl}, the subset of
 * PromQL the rules keep to; no Prometheus runs here.) The Grafana dashboard's queries are read the same way.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class AlertRulesTest {

    private static final String KEY = "alert-rules-key-0123456789";
    private static final Path RULES = Path.of("observability", "alerts.yaml");
    private static final Path DASHBOARD = Path.of("observability", "grafana-dashboard.json");

    private MockedNode fixture;
    private MockLlmServer model;
    private NodeRuntime node;
    private ApiChat api;
    private int management;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        management = FreePorts.take();
        fixture = MockedNode.start("gateway,worker,sandbox,scheduler", KEY, Map.of("llm.maxRetries", "1",
                "llm.retryBackoffMs", "10", "http.management.port", Integer.toString(management),
                "scheduler.fleetStatsMs", "200"));
        model = fixture.model;
        node = fixture.node;
        api = fixture.api;
    }

    @AfterAll
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> rules() throws Exception {
        Map<String, Object> file = YamlTree.yaml().load(Files.readString(RULES));
        List<Map<String, Object>> rules = new ArrayList<>();
        for (Object group : (List<Object>) file.get("groups")) {
            rules.addAll((List<Map<String, Object>>) ((Map<String, Object>) group).get("rules"));
        }
        return rules;
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyRuleSelectsRealSeriesAndOnlyTheAlertsOfAFailingModelFire() throws Exception {
        // given a node that answered one message, scraped
        converse("ok-" + UUID.randomUUID());
        Await.until("the fleet gauges read", Duration.ofSeconds(20), () -> scrape().contains("clawfleet_partitions_unowned{"));
        Await.until("every partition owned", Duration.ofSeconds(30),
                () -> scrape().contains("clawfleet_partitions_unowned{node=\"" + node.nodeId() + "\"} 0.0"));
        String before = scrape();
        long from = System.nanoTime();

        // when the model fails the next message, which becomes a dead letter
        model.outage(503);
        converse("down-" + UUID.randomUUID());
        model.outage(0);
        converse("ok-" + UUID.randomUUID());
        Await.until("the dead letter counted", Duration.ofSeconds(20), () -> scrape().contains("clawfleet_dead_letters_open{"));
        String after = scrape();
        double seconds = (System.nanoTime() - from) / 1e9;

        // then each rule is well formed, selects series the node exports, and fires as it should
        PromQl promql = new PromQl(PromQl.parseScrape(before), PromQl.parseScrape(after), seconds);
        List<Map<String, Object>> rules = rules();
        assertThat(rules).hasSizeGreaterThanOrEqualTo(8);
        TreeSet<String> firing = new TreeSet<>();
        for (Map<String, Object> rule : rules) {
            String name = (String) rule.get("alert");
            assertThat(name).as("every rule is an alert").matches("Clawfleet[A-Za-z]+");
            assertThat(String.valueOf(rule.get("for"))).as("%s waits before firing", name).matches("\\d+[smh]");
            assertThat(((Map<String, Object>) rule.get("labels")).get("severity")).as("%s's severity", name)
                    .isIn("info", "warning", "critical");
            assertThat(((Map<String, Object>) rule.get("annotations"))).as("%s explains itself", name)
                    .containsKeys("summary", "description");
            List<PromQl.Sample> result = promql.evaluate((String) rule.get("expr"));
            if (!result.isEmpty()) {
                firing.add(name);
            }
        }
        assertThat(promql.unmatched).as("selectors of series the node does not export").isEmpty();
        assertThat(firing).containsExactly("ClawfleetDeadLetters", "ClawfleetErrorBudgetBurn");

        // and every query of the Grafana dashboard is one the same evaluator reads, over series the node exports
        // (but for two counters that appear with their first event: a refused bus message, a sandbox run)
        PromQl dashboard = new PromQl(PromQl.parseScrape(before), PromQl.parseScrape(after), seconds);
        JsonObject json = new JsonObject(Files.readString(DASHBOARD));
        List<String> queries = json.getJsonArray("panels").stream().map(JsonObject.class::cast)
                .flatMap(panel -> panel.getJsonArray("targets").stream().map(JsonObject.class::cast))
                .map(target -> target.getString("expr")).toList();
        assertThat(queries).hasSizeGreaterThanOrEqualTo(15);
        queries.forEach(dashboard::evaluate);
        assertThat(dashboard.unmatched).as("dashboard selectors of series the node does not export")
                .allMatch(s -> s.equals("clawfleet_bus_rejected_total") || s.equals("clawfleet_sandbox_runs_total"));
        assertThat(dashboard.evaluate("sum by (tenant) (max by (tenant, kind) (clawfleet_dead_letters_open))"))
                .as("the dead letter panel shows the tenant").singleElement()
                .satisfies(sample -> assertThat(sample.labels()).containsEntry("tenant", "default"));
    }

    /** The split rule over three nodes' scrapes: quiet in one piece or alone, firing for 1|2 and for halves of 2|2. */
    @Test
    void theSplitAlertFiresWhenANodeSeesFewerMembersThanThereAreNodes() throws Exception {
        String expr = (String) rules().stream().filter(rule -> "ClawfleetClusterSplit".equals(rule.get("alert"))).findFirst()
                .orElseThrow().get("expr");
        java.util.function.Function<int[], List<PromQl.Sample>> seen = members -> {
            StringBuilder scrape = new StringBuilder();
            for (int i = 0; i < members.length; i++) {
                scrape.append("clawfleet_cluster_members{node=\"n").append(i).append("\"} ").append(members[i]).append(".0\n");
            }
            List<PromQl.Sample> samples = PromQl.parseScrape(scrape.toString());
            return new PromQl(samples, samples, 15).evaluate(expr);
        };
        assertThat(seen.apply(new int[] {3, 3, 3})).as("in one piece").isEmpty();
        assertThat(seen.apply(new int[] {1})).as("a node alone").isEmpty();
        assertThat(seen.apply(new int[] {1, 2, 2})).as("split 1|2").hasSize(1);
        assertThat(seen.apply(new int[] {2, 2, 2, 2})).as("split 2|2").hasSize(1);
    }

    @Test
    void theSubsetEvaluatorRefusesWhatItCannotEvaluateAndComputesWhatItCan() {
        List<PromQl.Sample> before = PromQl.parseScrape("""
                c_total{node="a",tenant="x"} 10.0
                c_total{node="b",tenant="y"} 5.0
                """);
        List<PromQl.Sample> after = PromQl.parseScrape("""
                # TYPE c_total counter
                c_total{node="a",tenant="x"} 30.0
                c_total{node="b",tenant="y"} 2.0
                g{node="a"} 3.0
                g{node="b"} 7.0
                """);
        PromQl promql = new PromQl(before, after, 10);
        assertThat(promql.evaluate("sum(rate(c_total[5m]))")).singleElement()
                .satisfies(s -> assertThat(s.value()).isEqualTo(2.2)); // 20/10 + (reset: 2)/10
        assertThat(promql.evaluate("max by (node) (g) > 5")).singleElement()
                .satisfies(s -> assertThat(s.labels()).containsEntry("node", "b"));
        assertThat(promql.evaluate("sum(g) / count(g) >= 5")).singleElement()
                .satisfies(s -> assertThat(s.value()).isEqualTo(5.0));
        assertThat(promql.evaluate("(max(g) > 1) and (min(g) > 5)")).isEmpty();
        assertThat(promql.evaluate("g{node=~\"a|c\"}")).hasSize(1);
        assertThat(promql.unmatched).isEmpty();
        promql.evaluate("missing_total{node=\"a\"} > 0");
        assertThat(promql.unmatched).containsExactly("missing_total{node=\"a\"}");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> promql.evaluate("histogram_quantile(0.99, g)"))
                .hasMessageContaining("outside the subset");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> promql.evaluate("g offset 5m"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private void converse(String chat) throws Exception {
        assertThat(api.ask(chat, "hello")).isNotBlank();
    }

    private String scrape() {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + management + "/metrics"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
