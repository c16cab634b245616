package io.clawfleet.shared.db;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DbUrlTest {

    @Test
    void parsesAllParts() {
        DbUrl url = DbUrl.parse("postgresql://claw:s3cr%40t+x@db.internal:6543/fleet?sslmode=require");
        assertThat(url.host()).isEqualTo("db.internal");
        assertThat(url.port()).isEqualTo(6543);
        assertThat(url.database()).isEqualTo("fleet");
        assertThat(url.user()).isEqualTo("claw");
        assertThat(url.password()).isEqualTo("s3cr@t+x");
        assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://db.internal:6543/fleet?sslmode=require");
    }

    @Test
    void theWholeUrlParsesBackToTheSameParts() {
        DbUrl url = new DbUrl("127.0.0.1", 5433, "fleet", "claw", "p@ss w+rd/:x", "sslmode=require");
        assertThat(DbUrl.parse(url.url())).isEqualTo(url);
    }

    @Test
    void redactedFormHidesThePassword() {
        assertThat(DbUrl.parse("postgresql://claw:secret@h/db").redacted()).doesNotContain("secret").contains("claw:***@h:5432/db");
    }

    @Test
    void rejectsWhatIsNotAPostgresUrl() {
        assertThatThrownBy(() -> DbUrl.parse("jdbc:postgresql://h/db")).hasMessageContaining("postgresql://");
        assertThatThrownBy(() -> DbUrl.parse("postgresql://h")).hasMessageContaining("no database");
    }
}
