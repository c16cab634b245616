package io.clawfleet.shared.store;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code toolSecondsPerDay} (issue 14) is a limit the operator may set, a whole number of seconds like the counts. */
class ToolSecondsLimitTest {

    @Test
    void theToolTimeOfADayIsALimitOfItsOwn() {
        assertThat(TenantLimits.parse(new JsonObject().put("toolSecondsPerDay", 3600)))
                .isEqualTo(new JsonObject().put("toolSecondsPerDay", 3600));
        assertThat(TenantLimits.parse(new JsonObject().put("toolSecondsPerDay", 0)).getInteger("toolSecondsPerDay")).isZero();
        // null unsets it, as every limit
        assertThat(TenantLimits.parse(new JsonObject().putNull("toolSecondsPerDay")).containsKey("toolSecondsPerDay")).isTrue();
    }

    @Test
    void aToolTimeOutOfRangeIsRefusedNamingIt() {
        for (Object bad : new Object[] {-1, 1_000_001, 1.5, "60"}) {
            assertThatThrownBy(() -> TenantLimits.parse(new JsonObject().put("toolSecondsPerDay", bad)))
                    .as(String.valueOf(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'toolSecondsPerDay'").hasMessageContaining("1000000");
        }
    }
}
