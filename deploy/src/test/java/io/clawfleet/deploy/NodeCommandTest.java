package io.clawfleet.deploy;

import io.clawfleet.shared.cluster.MemberLostException;
import org.junit.jupiter.api.Test;

import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What `clawfleet node` exits with when its start fails. */
class NodeCommandTest {

    @Test
    void aMemberLostDuringTheStartExitsWithTheStatusSupervisorsRestart() throws Exception {
        ExecutionException failed = new ExecutionException(new MemberLostException("worker-0", "merged into another cluster", null));
        assertThat(NodeCommand.startFailed(failed)).isEqualTo(Main.EXIT_MEMBER_LOST).isEqualTo(3);
    }

    @Test
    void anyOtherStartFailureIsRethrownAsItWas() {
        ExecutionException failed = new ExecutionException(new IllegalStateException("roles need a database"));
        assertThatThrownBy(() -> NodeCommand.startFailed(failed)).isSameAs(failed);
    }
}
