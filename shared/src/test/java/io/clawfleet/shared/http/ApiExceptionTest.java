package io.clawfleet.shared.http;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ApiExceptionTest {

    /** Issue 22: a database's or an exception's words stay in the operator's log; the caller gets an id. */
    @Test
    void anUnavailableAnswerNamesWhatFailedAndAnErrorIdNotTheCause() {
        ApiException answer = ApiException.unavailable("the task cannot be created",
                new IllegalStateException("ERROR: relation \"api_keys\" does not exist (host db.internal:5432)"), 1);
        assertThat(answer.status()).isEqualTo(503);
        assertThat(answer.retryAfterSeconds()).isEqualTo(1);
        assertThat(answer.getMessage()).matches("the task cannot be created right now \\(error id [0-9a-f]{8}\\)")
                .doesNotContain("api_keys").doesNotContain("db.internal");
    }
}
