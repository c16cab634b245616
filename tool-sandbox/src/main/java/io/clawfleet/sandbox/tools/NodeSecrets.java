package io.clawfleet.sandbox.tools;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.DbUrl;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The values a sandbox node's own environment and configuration hold, so they can be redacted from
 * whatever a run sends back. A last line of defence: runs never get the node's environment, and
 * under bubblewrap cannot see the node at all; without bubblewrap a run could read
 * {@code /proc/<node>/environ}, and this is what keeps those values out of the results.
 */
final class NodeSecrets {

    /** Variables whose values are not secret and too common to redact. */
    private static final Set<String> PUBLIC = Set.of("PATH", "HOME", "PWD", "OLDPWD", "LANG", "LANGUAGE", "TERM", "SHELL", "USER",
            "LOGNAME", "HOSTNAME", "JAVA_HOME", "TZ", "SHLVL", "_", "MAIL", "CLAWFLEET_ROLES", "CLAWFLEET_NODE_ID");
    private static final int MIN_LENGTH = 8;

    private NodeSecrets() {
    }

    static List<String> of(Map<String, String> environment, ClawfleetConfig config) {
        List<String> values = new ArrayList<>();
        environment.forEach((name, value) -> {
            if (value != null && value.length() >= MIN_LENGTH && !PUBLIC.contains(name) && !name.startsWith("LC_")
                    && !name.startsWith("XDG_") && !isPlainPath(value)) {
                values.add(value);
            }
        });
        values.add(config.apiKey());
        values.add(config.llm().apiKey());
        config.llm().providers().values().forEach(p -> values.add(p.apiKey()));
        values.add(config.security().adminBootstrapKey());
        values.add(config.telegram().botToken());
        values.add(config.cluster().secret());
        if (config.db().url() != null) {
            values.add(config.db().url());
            String password = DbUrl.parse(config.db().url()).password();
            values.add(password);
        }
        values.removeIf(v -> v == null || v.length() < MIN_LENGTH);
        return values;
    }

    /** An absolute path or list of them ({@code /usr/lib/jvm/...}): not a secret, and common in output. */
    private static boolean isPlainPath(String value) {
        return value.startsWith("/") && !value.contains("://") && !value.contains("@") && !value.contains(" ");
    }
}
