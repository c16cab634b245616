package io.clawfleet.gateway.auth;

import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class ModelNameTest {

    private static final Set<String> MAIN_ROLES = Set.of("default", "fast");

    @Test
    void aBotAndRoleNameThemselves() {
        assertThat(ModelName.parse("support/fast", MAIN_ROLES)).isEqualTo(new ModelName("support", "fast"));
        assertThat(ModelName.parse("support/default", Set.of())).isEqualTo(new ModelName("support", "default"));
        // only the first slash separates: the rest is the role, which the bot then does not have
        assertThat(ModelName.parse("support/fast/x", MAIN_ROLES)).isEqualTo(new ModelName("support", "fast/x"));
    }

    @Test
    void aRoleOfTheDefaultBotIsMains() {
        assertThat(ModelName.parse("default", MAIN_ROLES)).isEqualTo(new ModelName("main", "default"));
        assertThat(ModelName.parse("fast", MAIN_ROLES)).isEqualTo(new ModelName("main", "fast"));
    }

    @Test
    void anyOtherNameIsABotInItsDefaultRole() {
        assertThat(ModelName.parse("support", MAIN_ROLES)).isEqualTo(new ModelName("support", "default"));
        assertThat(ModelName.parse("fast", Set.of("default"))).isEqualTo(new ModelName("fast", "default"));
    }

    @Test
    void onlyANameWithASlashIsQualified() {
        assertThat(ModelName.qualified("support/fast")).contains(new ModelName("support", "fast"));
        assertThat(ModelName.qualified("support")).isEmpty();
        assertThat(ModelName.qualified("default")).isEmpty();
    }
}
