package io.clawfleet.sandbox.web;

import io.clawfleet.sandbox.exec.Sandboxes;
import io.clawfleet.shared.config.ClawfleetConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WebPolicyTest {

    private static WebPolicy policy(Map<String, String> config) {
        ClawfleetConfig.Sandbox sandbox = Sandboxes.config(config);
        return new WebPolicy(sandbox.web());
    }

    @Test
    void anOrdinaryUrlPasses() {
        WebPolicy.Target target = policy(Map.of()).check("https://Example.com./a/../b?q=1#frag");
        assertThat(target.host()).isEqualTo("example.com");
        assertThat(target.port()).isEqualTo(443);
        assertThat(target.https()).isTrue();
        assertThat(target.requestUri()).isEqualTo("/b?q=1");
    }

    @ParameterizedTest
    @ValueSource(strings = {"file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1:70/", "javascript:alert(1)",
            "dict://127.0.0.1:11211/", "jar:file:/x!/", "//example.com/", "example.com"})
    void onlyHttpAndHttpsAreFetched(String url) {
        assertThatThrownBy(() -> policy(Map.of()).check(url)).isInstanceOf(WebPolicy.WebRefusal.class)
                .hasMessageContaining("only http:// and https://");
    }

    @Test
    void portsFollowTheAllowAndDenyLists() {
        assertThatThrownBy(() -> policy(Map.of()).check("http://example.com:8080/")).hasMessageContaining("port 8080");
        WebPolicy open = policy(Map.of("sandbox.web.allowedPorts", "", "sandbox.web.blockedPorts", "22,25"));
        assertThat(open.check("http://example.com:8080/").port()).isEqualTo(8080);
        assertThatThrownBy(() -> open.check("http://example.com:25/")).hasMessageContaining("port 25");
    }

    @Test
    void theDomainAllowlistAllowsSubdomainsOnly() {
        WebPolicy policy = policy(Map.of("sandbox.web.allowedDomains", "example.com,docs.python.org"));
        assertThat(policy.check("https://www.example.com/").host()).isEqualTo("www.example.com");
        assertThat(policy.check("https://docs.python.org/3/").host()).isEqualTo("docs.python.org");
        assertThatThrownBy(() -> policy.check("https://notexample.com/")).hasMessageContaining("not among the sites");
        assertThatThrownBy(() -> policy.check("https://example.com.evil.io/")).hasMessageContaining("not among the sites");
        assertThatThrownBy(() -> policy.check("https://93.184.215.14/")).hasMessageContaining("not among the sites");
    }

    @Test
    void credentialsInTheUrlAreRefused() {
        assertThatThrownBy(() -> policy(Map.of()).check("http://example.com@127.0.0.1/")).hasMessageContaining("user name");
    }
}
