package io.clawfleet.worker;

import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.ChatStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Approvals that mean something (issue 22) on a real worker: a supervised bot's risky call waits
 * for an admin of another chat (or the API, see the gateway's ApprovalsApiTest); the asking chat
 * may withdraw it but never approve it; a decision names one call, which expires; in a group, admin
 * is a property of the sender.
 */
class ApprovalsTest {

    private static final String TENANT = AgentFixture.TENANT;
    private static final Pattern ID = Pattern.compile("approval id ([a-z0-9]+)");

    private final AgentFixture agent = new AgentFixture();

    @AfterEach
    void stop() {
        agent.close();
    }

    private void start() {
        agent.startWorker(Map.of("agent.autonomy", "supervised"));
    }

    /** A chat that has written once and was then made admin by the operator. */
    private String adminChat(String prefix) {
        String chat = AgentFixture.chat(prefix);
        agent.ask(chat, "hello", 1);
        assertThat(result(new ChatStore(agent.database.pool()).setRole(BotRef.main(TENANT), "api", chat, "admin"))).isTrue();
        return chat;
    }

    private static String idOf(String question) {
        Matcher matcher = ID.matcher(question);
        assertThat(matcher.find()).as("an approval id in: " + question).isTrue();
        return matcher.group(1);
    }

    private static String sendTo(String target, String content) {
        return "call:message_send {\"chat_id\":\"" + target + "\",\"content\":\"" + content + "\"}";
    }

    @Test
    void aRiskyCallWaitsForAnotherAdminAndItsOwnChatCannotApproveIt() {
        start();
        String asker = adminChat("asker");
        String approver = adminChat("approver");
        String target = AgentFixture.chat("target");
        agent.ask(target, "hello", 1);
        // when an admin chat's model asks to send into another chat
        String question = agent.ask(asker, sendTo(target, "ping"), 2);
        // then nothing is sent; the chat is told the call waits for an admin, under an id, with an expiry
        assertThat(question).contains("needs an admin's approval").contains("expires").contains("/approve ");
        String id = idOf(question);
        // and neither /yes nor /approve from the asking chat runs it
        assertThat(agent.ask(asker, "/yes", 3)).contains("cannot be approved from this chat");
        assertThat(agent.ask(asker, "/approve " + id, 4)).contains("cannot be decided from the chat that asked");
        assertThat(agent.replies(target, 1)).containsExactly("echo: hello");
        assertThat(agent.value("SELECT decision FROM pending_approvals WHERE approval_id = $1", id)).isNull();
        // when another admin chat approves it by its id
        assertThat(agent.ask(approver, "/approve " + id, 2)).isEqualTo("Approved message_send in api:" + asker + " (" + id + ").");
        // then the asking chat's turn carries on: the call runs, and the chat learns who approved it
        List<String> replies = agent.replies(asker, 5);
        assertThat(replies.get(4)).contains("was approved by admin alice in api:" + approver)
                .contains("tool message_send said: Sent to " + target + ".");
        assertThat(agent.replies(target, 2)).contains("ping");
        // and the decision is in the audit trail beside the call's own rows
        assertThat(agent.audit()).anySatisfy(event -> {
            assertThat(event.eventType()).isEqualTo("approval");
            assertThat(event.outcome()).isEqualTo("success");
            assertThat(event.metadata().getString("approvalId")).isEqualTo(id);
            assertThat(event.metadata().getString("decidedBy")).contains(approver);
        });
        assertThat(agent.audit()).filteredOn(e -> "message_send".equals(e.toolName()) && "tool_call".equals(e.eventType()))
                .extracting(AuditStore.Event::outcome).containsExactly("approval_requested", "success");
    }

    @Test
    void aNormalChatCannotListOrDecideApprovals() {
        start();
        String asker = adminChat("asker");
        String id = idOf(agent.ask(asker, sendTo(AgentFixture.chat("elsewhere"), "ping"), 2));
        String stranger = AgentFixture.chat("stranger");
        // when a normal chat tries the admin's commands, whatever the model would say
        assertThat(agent.ask(stranger, "/approve " + id, 1)).startsWith("Only an admin may");
        assertThat(agent.ask(stranger, "/approvals", 2)).startsWith("Only an admin may");
        // then the call still waits, undecided
        assertThat(agent.value("SELECT decision FROM pending_approvals WHERE approval_id = $1", id)).isNull();
        assertThat(agent.value("SELECT count(*) FROM pending_approvals WHERE approval_id = $1", id)).isEqualTo(1L);
    }

    @Test
    void anAdminListsWaitingCallsAndMayRefuseOne() {
        start();
        String asker = adminChat("asker");
        String approver = adminChat("approver");
        String id = idOf(agent.ask(asker, sendTo(AgentFixture.chat("elsewhere"), "ping"), 2));
        assertThat(agent.ask(approver, "/approvals", 2)).contains(id).contains("message_send").contains("api:" + asker)
                .contains("asked by alice");
        assertThat(agent.ask(approver, "/deny " + id, 3)).startsWith("Refused message_send");
        List<String> replies = agent.replies(asker, 3);
        assertThat(replies.get(2)).contains("was refused by admin alice").contains("was not approved");
        assertThat(agent.audit()).anySatisfy(event -> {
            assertThat(event.eventType()).isEqualTo("approval");
            assertThat(event.outcome()).isEqualTo("denied");
        });
        // a second decision finds nothing waiting
        assertThat(agent.ask(approver, "/approve " + id, 4)).contains("No call waits under " + id);
    }

    @Test
    void theAskingChatMayWithdrawItsCall() {
        start();
        String asker = adminChat("asker");
        agent.ask(asker, sendTo(AgentFixture.chat("elsewhere"), "ping"), 2);
        assertThat(agent.ask(asker, "/no", 3)).contains("was not approved (the chat withdrew the call (/no))");
        assertThat(agent.audit()).anySatisfy(event -> {
            assertThat(event.toolName()).isEqualTo("message_send");
            assertThat(event.outcome()).isEqualTo("denied");
            assertThat(event.reason()).contains("withdrew");
        });
        assertThat(agent.value("SELECT count(*) FROM pending_approvals")).isEqualTo(0L);
    }

    @Test
    void approveAlwaysLetsThatChatRunTheToolFromThenOn() {
        start();
        String asker = adminChat("asker");
        String approver = adminChat("approver");
        String target = AgentFixture.chat("target");
        agent.ask(target, "hello", 1);
        String id = idOf(agent.ask(asker, sendTo(target, "one"), 2));
        agent.ask(approver, "/approve-always " + id, 2);
        assertThat(agent.replies(asker, 3).get(2)).contains("Sent to " + target);
        // the next call of the tool in that chat runs without asking
        assertThat(agent.ask(asker, sendTo(target, "two"), 4)).isEqualTo("tool message_send said: Sent to " + target + ".");
        // but another chat still asks
        assertThat(agent.ask(approver, sendTo(target, "three"), 3)).contains("needs an admin's approval");
    }

    @Test
    void anExpiredCallCanNoLongerBeApproved() {
        start();
        String asker = adminChat("asker");
        String approver = adminChat("approver");
        String id = idOf(agent.ask(asker, sendTo(AgentFixture.chat("elsewhere"), "ping"), 2));
        agent.value("UPDATE pending_approvals SET expires_at = now() - interval '1 second' WHERE approval_id = $1 RETURNING 1", id);
        assertThat(agent.ask(approver, "/approve " + id, 2)).contains("expired");
        assertThat(agent.ask(approver, "/approvals", 3)).isEqualTo("No calls wait for approval.");
        // the asking chat's /yes no longer means anything either
        assertThat(agent.ask(asker, "/yes", 3)).contains("expired without an admin's approval");
        assertThat(agent.value("SELECT count(*) FROM pending_approvals")).isEqualTo(0L);
    }

    @Test
    void callsWithinTheChatsOwnCornerRunWithoutApproval() {
        start();
        String chat = AgentFixture.chat("own");
        // its own memory, its own scratch files, a message to itself: nothing beyond the chat changes
        assertThat(agent.ask(chat, "call:memory_write {\"scope\":\"chat\",\"content\":\"likes tea\"}", 1))
                .startsWith("tool memory_write said:");
        assertThat(agent.ask(chat, "call:message_send {\"chat_id\":\"" + chat + "\",\"content\":\"note\"}", 3))
                .isEqualTo("tool message_send said: Sent to " + chat + ".");
        // a task that would run prompts on its own waits
        assertThat(agent.ask(chat, "call:tasks_schedule {\"prompt\":\"hi\",\"schedule_type\":\"interval\",\"schedule_value\":\"3600000\"}", 4))
                .contains("needs an admin's approval");
    }

    @Test
    void inAGroupChatAdminIsASenderNotTheWholeGroup() {
        start();
        String group = "bot1:-100" + Math.abs(System.nanoTime() % 1_000_000);
        agent.sendAs("telegram", group, "42", "hello", null);
        agent.replies("telegram", group, 1);
        ChatStore chats = new ChatStore(agent.database.pool());
        // given a group made admin without naming senders: nobody in it is admin
        result(chats.setRole(BotRef.main(TENANT), "telegram", group, "admin"));
        agent.sendAs("telegram", group, "42", "call:chat_set_role {\"chat_id\":\"api:x\",\"role\":\"admin\"}", null);
        assertThat(agent.replies("telegram", group, 2).get(1)).contains("error (denied)");
        // when the operator names sender 42 as the group's admin
        result(chats.setRole(BotRef.main(TENANT), "telegram", group, "admin", List.of("42")));
        // then 42 acts as admin there (an admin-only tool is offered and judged allowed, and waits for approval) ...
        agent.sendAs("telegram", group, "42", "call:chat_set_role {\"chat_id\":\"api:x\",\"role\":\"admin\"}", null);
        assertThat(agent.replies("telegram", group, 3).get(2)).contains("needs an admin's approval");
        // ... and 43, in the same group, does not
        agent.sendAs("telegram", group, "43", "/no", null);
        agent.replies("telegram", group, 4);
        agent.sendAs("telegram", group, "43", "call:chat_set_role {\"chat_id\":\"api:x\",\"role\":\"admin\"}", null);
        assertThat(agent.replies("telegram", group, 5).get(4)).contains("error (denied)");
        assertThat(result(chats.isAdmin((Long) agent.value("SELECT id FROM chats WHERE chat_key = $1", group), "43"))).isFalse();
    }
}
