package io.clawfleet.worker;

import io.clawfleet.shared.testing.Prometheus;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.TurnStepStore;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import io.clawfleet.shared.store.BotRef;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The agent's tool loop on a real worker node, driven by the mock model's scripted tool calls
 * ({@code call:<tool> {json}} in a message): results, argument errors, policy, audit, admin
 * bootstrap, approvals and the execution ledger.
 */
class AgentToolsTest {

    private static final String TENANT = AgentFixture.TENANT;
    private static final String BOOTSTRAP = AgentFixture.BOOTSTRAP;

    private final AgentFixture agent = new AgentFixture();
    private MockLlmServer model;
    private NodeRuntime worker;
    private Database database;
    private InboxStore inbox;
    private final Partitioner partitioner = agent.partitioner;

    private void startWorker(Map<String, String> extra) {
        agent.startWorker(extra);
        model = agent.model;
        worker = agent.worker;
        database = agent.database;
        inbox = agent.inbox;
    }

    @AfterEach
    void stop() {
        agent.close();
    }

    private InboundMessage send(String chat, String text) {
        return agent.send(chat, text);
    }

    private List<String> replies(String chat, int count) {
        return agent.replies(chat, count);
    }

    private List<AuditStore.Event> audit() {
        return agent.audit();
    }

    private String ask(String chat, String text, int replyNumber) {
        return agent.ask(chat, text, replyNumber);
    }

    @Test
    void aToolResultGoesBackToTheModelAndTheCallIsAudited() {
        startWorker(Map.of());
        String chat = "c-" + UUID.randomUUID();
        send("other", "hello");
        replies("other", 1);
        // when the model calls a tool (the user is admin of nothing: sending to itself is allowed)
        String reply = ask(chat, "call:message_send {\"chat_id\":\"" + chat + "\",\"content\":\"a note to self\"}", 2);
        // then the tool ran, the model got its result, and the chat got both the sent message and the answer
        assertThat(replies(chat, 2)).contains("a note to self");
        assertThat(reply).isEqualTo("tool message_send said: Sent to " + chat + ".");
        assertThat(audit()).anySatisfy(event -> {
            assertThat(event.toolName()).isEqualTo("message_send");
            assertThat(event.outcome()).isEqualTo("success");
            assertThat(event.actorRole()).isEqualTo("normal");
            assertThat(event.args().getString("content")).isEqualTo("a note to self");
        });
    }

    @Test
    void invalidArgumentsAreReportedToTheModelByName() {
        startWorker(Map.of());
        String reply = ask("c-" + UUID.randomUUID(), "call:chat_register {\"rol\":\"admin\"}", 1);
        assertThat(reply).contains("error (invalid_args)").contains("unknown argument 'rol'")
                .contains("missing required argument 'role'");
        assertThat(audit()).anySatisfy(event -> assertThat(event.outcome()).isEqualTo("invalid_args"));
    }

    @Test
    void aNormalChatIsRefusedWhatOnlyAdminsMayDoAndTheRefusalIsAudited() {
        startWorker(Map.of());
        String reply = ask("c-" + UUID.randomUUID(), "call:message_send {\"chat_id\":\"someone-else\",\"content\":\"hi\"}", 1);
        assertThat(reply).contains("error (denied)").contains("only allowed in an admin chat");
        assertThat(audit()).anySatisfy(event -> {
            assertThat(event.toolName()).isEqualTo("message_send");
            assertThat(event.outcome()).isEqualTo("denied");
        });
    }

    @Test
    void aNormalChatWhoseKeyLooksLikeATelegramTargetCannotSendIntoThatTelegramChat() {
        startWorker(Map.of());
        // given a Telegram chat of the tenant, and an API chat that named itself after it
        String telegram = "bot1:" + UUID.randomUUID();
        agent.send("telegram", telegram, "hi from telegram", null);
        agent.replies("telegram", telegram, 1);
        String impostor = "telegram:" + telegram;
        // when the API chat sends to its own key, which message_send reads as the Telegram chat
        String reply = ask(impostor, "call:message_send {\"chat_id\":\"" + impostor + "\",\"content\":\"hijack\"}", 1);
        // then the policy judges the chat it would send to: refused, audited, and nothing reached Telegram
        assertThat(reply).contains("error (denied)").contains("only allowed in an admin chat");
        assertThat(audit()).anySatisfy(event -> {
            assertThat(event.toolName()).isEqualTo("message_send");
            assertThat(event.outcome()).isEqualTo("denied");
        });
        assertThat(agent.replies("telegram", telegram, 1)).noneMatch(text -> text.contains("hijack"));
    }

    @Test
    void aNormalChatMayNameItselfWithItsChannelPrefix() {
        startWorker(Map.of());
        String chat = "c-" + UUID.randomUUID();
        // when a normal API chat sends to api:<its own key>
        String reply = ask(chat, "call:message_send {\"chat_id\":\"api:" + chat + "\",\"content\":\"to myself\"}", 2);
        // then that is its own chat: sent, not refused
        assertThat(reply).isEqualTo("tool message_send said: Sent to " + chat + ".");
        assertThat(replies(chat, 2)).contains("to myself");
    }

    @Test
    void noChatMakesItselfAdminOnlyTheOperatorOrAnAdminChatGrantsTheRole() {
        startWorker(Map.of());
        String admin = "admin-" + UUID.randomUUID();
        // when a chat asks for the admin role, with or without the old bootstrap key
        assertThat(ask(admin, "call:chat_register {\"role\":\"admin\"}", 1)).contains("error (denied)")
                .contains("clawfleet admin grant --chat");
        assertThat(ask(admin, "call:chat_register {\"role\":\"admin\",\"bootstrap_key\":\"" + BOOTSTRAP + "\"}", 2))
                .contains("error (invalid_args)").contains("unknown argument 'bootstrap_key'");
        // then it stays normal, and may not grant roles either
        assertThat(agent.value("SELECT role FROM chats WHERE chat_key = $1", admin)).isEqualTo("normal");
        send("target", "hi");
        replies("target", 1);
        assertThat(ask(admin, "call:chat_set_role {\"chat_id\":\"target\",\"role\":\"admin\"}", 3)).contains("error (denied)");
        // once the operator granted the role, the admin chat may make others admin
        result(new ChatStore(database.pool()).setRole(BotRef.main(AgentFixture.TENANT), "api", admin, "admin"));
        assertThat(ask(admin, "call:chat_set_role {\"chat_id\":\"target\",\"role\":\"admin\"}", 4))
                .contains("Chat target is now admin.");
        assertThat(audit().toString()).doesNotContain(BOOTSTRAP);
        // and each role change a chat tried is audited as a tool call of that chat, refused or done (issue 22)
        assertThat(audit()).filteredOn(e -> "chat_set_role".equals(e.toolName()))
                .allSatisfy(e -> {
                    assertThat(e.eventType()).isEqualTo(AuditStore.TOOL_CALL);
                    assertThat(e.chatKey()).isEqualTo(admin);
                    assertThat(e.args().getString("chat_id")).isEqualTo("target");
                })
                .extracting(AuditStore.Event::outcome).containsExactly("denied", "success");
    }

    @Test
    void aRevokeCommittedBeforeATurnStartsAppliesToAMessageAcceptedWhileTheChatWasAdmin() {
        startWorker(Map.of());
        String admin = "admin-" + UUID.randomUUID();
        String target = "target-" + UUID.randomUUID();
        ChatStore chats = new ChatStore(database.pool());
        ask(target, "hi", 1);
        ask(admin, "hello", 1);
        result(chats.setRole(BotRef.main(AgentFixture.TENANT), "api", admin, "admin"));
        servedPartitionOf(admin);
        // given a message accepted while the chat was admin: its intake saw the role
        InboundMessage message = acceptOnly(admin, "call:chat_set_role {\"chat_id\":\"" + target + "\",\"role\":\"admin\"}");
        assertThat(message.adminChat()).isTrue();
        // when the operator revokes the role before the message's turn starts
        result(chats.setRole(BotRef.main(AgentFixture.TENANT), "api", admin, "normal"));
        wake(message);
        // then the turn reads the role again and runs without admin rights
        assertThat(replies(admin, 2).get(1)).contains("error (denied)");
        assertThat(agent.value("SELECT count(*) FROM chats WHERE chat_key = $1 AND role = 'admin'", target)).isEqualTo(0L);
    }

    @Test
    void aMessageAcceptedWhileTheChatWasNormalRunsWithoutAdminRightsTheNextOneWithThem() {
        startWorker(Map.of());
        String admin = "admin-" + UUID.randomUUID();
        String target = "target-" + UUID.randomUUID();
        String grant = "call:chat_set_role {\"chat_id\":\"" + target + "\",\"role\":\"admin\"}";
        ChatStore chats = new ChatStore(database.pool());
        ask(target, "hi", 1);
        ask(admin, "hello", 1);
        servedPartitionOf(admin);
        // given a message accepted while the chat was normal: its turn will not read the role
        InboundMessage message = acceptOnly(admin, grant);
        assertThat(message.adminChat()).isFalse();
        // when the operator grants the role before the message's turn starts
        result(chats.setRole(BotRef.main(AgentFixture.TENANT), "api", admin, "admin"));
        wake(message);
        // then that message keeps the rights its chat had when it arrived, and the next one has the new ones
        assertThat(replies(admin, 2).get(1)).contains("error (denied)");
        assertThat(ask(admin, grant, 3)).contains("Chat " + target + " is now admin.");
    }

    /** Puts a message in the chat's inbox without waking its owner (the sweep leaves it for two seconds). */
    private InboundMessage acceptOnly(String chat, String text) {
        return result(inbox.accept(AgentFixture.TENANT, "api", chat, partitioner.partitionOf(AgentFixture.TENANT, "api", chat),
                UUID.randomUUID().toString(), "alice", "user", text, null)).message();
    }

    private void wake(InboundMessage message) {
        worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
    }

    @Test
    void aSecretInToolArgumentsIsStoredNowhere() {
        startWorker(Map.of());
        // given a look at the execution ledger each time the model is asked (the turn's commit clears it)
        List<String> ledger = new CopyOnWriteArrayList<>();
        model.beforeAnswer(body -> database.pool().query("SELECT payload::text FROM turn_steps").execute()
                .map(rows -> {
                    rows.forEach(row -> ledger.add(row.getString(0)));
                    return null;
                }));
        String chat = "secret-" + UUID.randomUUID();
        // when the model passes a secret the node knows (here the old bootstrap key) to a tool
        String reply = ask(chat, "call:chat_register {\"role\":\"admin\",\"bootstrap_key\":\"" + BOOTSTRAP + "\"}", 1);
        // then the call was judged (and refused), but no table holds the secret: not the ledger, the history or the audit trail
        assertThat(reply).contains("error (invalid_args)");
        assertThat(String.join("\n", ledger)).contains("chat_register").doesNotContain(BOOTSTRAP);
        assertThat(stored("SELECT coalesce(content, '') || coalesce(tool_calls::text, '') FROM messages"))
                .contains("bootstrap_key").doesNotContain(BOOTSTRAP);
        assertThat(audit().toString()).contains("chat_register").doesNotContain(BOOTSTRAP);
    }

    @Test
    void aReadOnlyBotRefusesToolsThatChangeThings() {
        startWorker(Map.of("agent.autonomy", "read_only"));
        String chat = "ro-" + UUID.randomUUID();
        assertThat(ask(chat, "call:message_send {\"chat_id\":\"" + chat + "\",\"content\":\"x\"}", 1))
                .contains("error (denied)").contains("read-only");
    }

    @Test
    void aTurnReRunAfterACrashReplaysTheLedgerInsteadOfCallingTheModelAndTheToolAgain() {
        startWorker(Map.of());
        String chat = "ledger-" + UUID.randomUUID();
        // given a message whose turn got as far as one model answer and its tool's result before the worker died
        servedPartitionOf(chat);
        InboundMessage message = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), "m1",
                "alice", "user", "do the thing", null)).message();
        Fence fence = new Fence(message.partition(), "w1", epoch(message.partition()));
        TurnStepStore ledger = new TurnStepStore(database.pool());
        JsonObject call = new JsonObject().put("id", "call_1").put("name", "message_send")
                .put("arguments", new JsonObject().put("chat_id", chat).put("content", "done already").encode());
        result(ledger.record(fence, message.id(), TENANT, 0, "model", new JsonObject().put("content", (String) null)
                .put("calls", new JsonArray().add(call)).put("model", "mock").put("inputTokens", 10).put("outputTokens", 3)));
        result(ledger.record(fence, message.id(), TENANT, 1, "tool", new JsonObject().put("callId", "call_1")
                .put("name", "message_send").put("content", "Sent to " + chat + ".")));
        long before = model.requestCount();
        // when the worker is restarted and runs the turn again
        agent.restartWorker();
        // then the model is asked only for the rest, the tool is not run again, and the ledger is cleared
        List<String> replies = replies(chat, 1);
        assertThat(replies).containsExactly("tool message_send said: Sent to " + chat + ".");
        assertThat(model.requestCount() - before).isEqualTo(1);
        assertThat(result(ledger.load(message.id()))).isEmpty();
        long usage = result(database.pool().preparedQuery("SELECT sum(input_tokens) FROM llm_usage WHERE inbox_id = $1")
                .execute(Tuple.of(message.id()))).iterator().next().getLong(0);
        assertThat(usage).as("tokens of the replayed step count too").isGreaterThanOrEqualTo(10);
    }

    @Test
    void aCallThatChangesThingsStartedByAWorkerThatDiedIsNotRunAgain() {
        startWorker(Map.of());
        String chat = "interrupted-" + UUID.randomUUID();
        // given a turn whose worker died after it marked a message_send call started, before the call's result was saved
        InboundMessage message = interruptedSend(chat, false);
        // when the next worker runs the turn again
        agent.restartWorker();
        // then the call is not run again: the model is told it may have taken effect, and the chat gets only the reply
        assertThat(replies(chat, 1).get(0)).contains("tool message_send said:", "may or may not have taken effect",
                "not run again");
        assertThat(outboxRows(chat)).isEqualTo("1\n");
        assertThat(audit()).anySatisfy(event -> {
            assertThat(event.toolName()).isEqualTo("message_send");
            assertThat(event.outcome()).isEqualTo("error");
            assertThat(event.reason()).contains("not run again");
        });
        assertThat(result(new TurnStepStore(database.pool()).load(message.id()))).isEmpty();
    }

    @Test
    void anOwnerThatLostThePartitionWhileARestartedTurnWaitedCountsNoRestart() {
        String chat = "stale-" + UUID.randomUUID();
        InboundMessage message = restartedTwice(chat);
        long epoch = epoch(message.partition());
        String owner = stored("SELECT owner_node FROM partition_leases WHERE partition = " + message.partition()).strip();
        TurnStepStore ledger = new TurnStepStore(database.pool());
        // an owner of an older epoch (its restarted turn waited while the partition moved on) counts nothing
        Throwable stale = result(ledger.countRestart(new Fence(message.partition(), owner, epoch - 1), message.id())
                .map(v -> (Throwable) null).recover(io.vertx.core.Future::succeededFuture));
        assertThat(stale).isInstanceOf(io.clawfleet.shared.store.PartitionLostException.class);
        assertThat(stored("SELECT attempts FROM inbox WHERE id = " + message.id())).isEqualTo("2\n");
        // the owner that holds it does
        result(ledger.countRestart(new Fence(message.partition(), owner, epoch), message.id()));
        assertThat(stored("SELECT attempts FROM inbox WHERE id = " + message.id())).isEqualTo("3\n");
    }

    @Test
    void aRetryReadsTheRestartsCountedSoFarAndCountsNone() {
        String chat = "retry-" + UUID.randomUUID();
        InboundMessage message = restartedTwice(chat);
        TurnStepStore ledger = new TurnStepStore(database.pool());
        // a retry on the owner that started the turn sees the two restarts (it runs alone for them) and adds none
        assertThat(result(ledger.retry(message.id())).restarts()).isEqualTo(2);
        assertThat(stored("SELECT attempts FROM inbox WHERE id = " + message.id())).isEqualTo("2\n");
        // where a takeover's first read counts the first restart
        InboundMessage other = result(inbox.accept(TENANT, "api", chat, message.partition(), "m2", "alice", "user",
                "hello again", null)).message();
        assertThat(result(ledger.resume(other.id())).restarts()).isZero();
        assertThat(stored("SELECT attempts FROM inbox WHERE id = " + other.id())).isEqualTo("1\n");
    }

    @Test
    void aCallThatChangesThingsAndFinishedIsReplayedFromItsResult() {
        startWorker(Map.of());
        String chat = "finished-" + UUID.randomUUID();
        // given a turn whose worker died after a message_send call's start and result were saved
        interruptedSend(chat, true);
        // when the next worker runs the turn again, then the result is replayed and the call not run again
        agent.restartWorker();
        assertThat(replies(chat, 1)).containsExactly("tool message_send said: Sent to " + chat + ".");
        assertThat(outboxRows(chat)).isEqualTo("1\n");
    }

    /**
     * A message in {@code chat} whose turn asked for a message_send call into the chat and marked it started in the
     * ledger; with {@code withResult}, the call's result was saved too. Its worker died then.
     */
    private InboundMessage interruptedSend(String chat, boolean withResult) {
        return interruptedSend(chat, withResult, false);
    }

    /** As above; with {@code redacted}, the recorded call's arguments lost a secret (the ledger keeps none). */
    private InboundMessage interruptedSend(String chat, boolean withResult, boolean redacted) {
        servedPartitionOf(chat);
        InboundMessage message = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), "m1",
                "alice", "user", "send it", null)).message();
        Fence fence = new Fence(message.partition(), "w1", epoch(message.partition()));
        TurnStepStore ledger = new TurnStepStore(database.pool());
        JsonObject call = new JsonObject().put("id", "call_1").put("name", "message_send")
                .put("arguments", new JsonObject().put("chat_id", chat).put("content", "sent at most once").encode());
        result(ledger.record(fence, message.id(), TENANT, 0, "model", new JsonObject().put("calls", new JsonArray().add(call))
                .put("redacted", redacted).put("model", "mock")));
        result(ledger.record(fence, message.id(), TENANT, 1, "tool_started", new JsonObject().put("callId", "call_1")
                .put("name", "message_send")));
        if (withResult) {
            result(ledger.record(fence, message.id(), TENANT, 2, "tool", new JsonObject().put("callId", "call_1")
                    .put("name", "message_send").put("content", "Sent to " + chat + ".")));
        }
        return message;
    }

    @Test
    void aCallThatLostASecretInTheLedgerAndStartedIsNotRunAgainNorAskedForAgain() {
        startWorker(Map.of());
        // given a turn whose worker died after it marked a call started, the call's arguments recorded without a
        // secret they held (the chaos run's counter, whose argument "key" reads as one, was counted twice by this)
        String chat = "interrupted-secret-" + UUID.randomUUID();
        interruptedSend(chat, false, true);
        long before = model.requestCount();
        // when the next worker runs the turn again
        agent.restartWorker();
        // then the call is not run again and the model is not asked for it again: it is told the call may have run
        assertThat(replies(chat, 1).get(0)).contains("may or may not have taken effect", "not run again");
        assertThat(outboxRows(chat)).isEqualTo("1\n");
        assertThat(model.requestCount() - before).isEqualTo(1);

        // and a call that finished before the worker died is replayed from its result, not run again
        String finished = "finished-secret-" + UUID.randomUUID();
        interruptedSend(finished, true, true);
        agent.restartWorker();
        assertThat(replies(finished, 1)).containsExactly("tool message_send said: Sent to " + finished + ".");
        assertThat(outboxRows(finished)).isEqualTo("1\n");
    }

    private String outboxRows(String chat) {
        return stored("SELECT count(*) FROM outbox o JOIN chats c ON c.id = o.chat_id WHERE c.chat_key = '" + chat + "'");
    }

    @Test
    void onlyMessagesThatMayHaveRunBeforeHaveTheirLedgerRead() throws Exception {
        startWorker(Map.of());
        // given a message that was waiting in its chat's inbox when the worker (re)started: an earlier
        // owner of the partition may have begun its turn
        String chat = "fresh-" + UUID.randomUUID();
        agent.restartWorker(() -> result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat),
                "w", "alice", "user", "waiting", null)));
        replies(chat, 1);
        double readsAfterScan = ledgerReads();
        // when three more messages come to the new worker
        for (int i = 1; i <= 3; i++) {
            ask(chat, "fresh " + i, 1 + i);
        }
        // then the waiting one's ledger was read, the later ones' were not: no turn can have run before
        assertThat(readsAfterScan).isEqualTo(1);
        assertThat(ledgerReads()).isEqualTo(1);
    }

    @Test
    void ofAChatsMessagesWaitingAtAClaimOnlyTheFirstHasItsLedgerReadAndItsStartCounted() throws Exception {
        startWorker(Map.of());
        // given three messages of one chat waiting when the worker (re)started: an earlier owner may have begun the
        // first one's turn, not the others' (a chat runs one turn at a time, in order)
        String chat = "backlog-" + UUID.randomUUID();
        agent.restartWorker(() -> {
            for (String text : List.of("one", "two", "three")) {
                result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), text, "alice", "user",
                        text, null));
            }
        });
        replies(chat, 3);
        // then only the first one's ledger was read, and only its start counted as a restart (the commit adds one to
        // each)
        assertThat(ledgerReads()).isEqualTo(1);
        assertThat(stored("SELECT i.attempts FROM inbox i JOIN chats c ON c.id = i.chat_id WHERE c.chat_key = '" + chat
                + "' ORDER BY i.seq")).isEqualTo("2\n1\n1\n");
    }

    @Test
    void aMessageWhoseTurnKeptStoppingItsOwnersIsDeadLetteredWithoutAModelCallAndItsChatGoesOn() {
        startWorker(Map.of());
        String chat = "poison-" + UUID.randomUUID();
        // given a message four owners started and none finished (each died mid-turn), taken over by a fifth that dies too
        // (its start is counted by the next owner: worker.maxTurnStarts 5)
        long[] poison = new long[1];
        long asked = model.requestCount();
        agent.restartWorker(() -> {
            poison[0] = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), "p",
                    "alice", "user", "the message that kills workers", null)).message().id();
            result(database.pool().preparedQuery("UPDATE inbox SET attempts = 4 WHERE id = $1").execute(Tuple.of(poison[0])));
        });
        // when the next owner takes the partition over
        List<String> replies = replies(chat, 1);
        // then it does not start the turn: an error reply that says why, a dead letter to replay, no model call
        assertThat(replies.get(0)).contains("could not answer this message", "started 5 times", "an operator can replay it");
        assertThat(model.requestCount()).isEqualTo(asked);
        assertThat(stored("SELECT error FROM dead_letters WHERE kind = 'inbound' AND ref_id = '" + poison[0] + "'"))
                .contains("started 5 times");
        // and the chat goes on with its next message
        assertThat(ask(chat, "hello again", 2)).doesNotContain("could not answer");
    }

    @Test
    void aTurnStartedAgainBelowTheLimitRunsAndItsStartIsCounted() {
        startWorker(Map.of());
        String chat = "survivor-" + UUID.randomUUID();
        // given a message three owners started and none finished; the restart makes the fourth, short of the limit of 5
        long[] message = new long[1];
        agent.restartWorker(() -> {
            message[0] = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), "s",
                    "alice", "user", "hello", null)).message().id();
            result(database.pool().preparedQuery("UPDATE inbox SET attempts = 3 WHERE id = $1").execute(Tuple.of(message[0])));
        });
        // when the next owner takes over, then it answers as usual
        assertThat(replies(chat, 1).get(0)).doesNotContain("could not answer");
        // and the earlier owner's start was counted (3 before, the one the restart cut, the commit)
        assertThat(stored("SELECT attempts FROM inbox WHERE id = " + message[0])).isEqualTo("5\n");
        assertThat(stored("SELECT count(*) FROM dead_letters WHERE ref_id = '" + message[0] + "'")).isEqualTo("0\n");
    }

    @Test
    void aRestartedTurnHoldsTheNextRestartedTurnUntilItsCommitNotOnlyUntilItsModelAnswered() {
        startWorker(Map.of());
        String[] chats = {"held-one-" + UUID.randomUUID(), "held-two-" + UUID.randomUUID()};
        String[] texts = {"restarted one", "restarted two"};
        long[] ids = new long[2];
        // given: the first restarted turn's commit cannot finish yet (a row lock on its inbox row, taken while its
        // model call is answered), as a commit on a loaded database takes a while
        io.vertx.sqlclient.SqlConnection[] locker = new io.vertx.sqlclient.SqlConnection[1];
        io.vertx.sqlclient.Transaction[] lock = new io.vertx.sqlclient.Transaction[1];
        model.beforeAnswer(body -> {
            if (locker[0] != null) {
                return io.vertx.core.Future.succeededFuture();
            }
            long id = body.encode().contains(texts[0]) ? ids[0] : ids[1];
            return database.pool().getConnection().compose(connection -> {
                locker[0] = connection;
                return connection.begin().compose(tx -> {
                    lock[0] = tx;
                    return connection.preparedQuery("SELECT id FROM inbox WHERE id = $1 FOR UPDATE").execute(Tuple.of(id));
                });
            }).mapEmpty();
        });
        long before = model.requestCount();
        // and two messages of two chats, each started once by an earlier owner that died, waiting as the worker restarts
        agent.restartWorker(() -> {
            for (int i = 0; i < 2; i++) {
                ids[i] = result(inbox.accept(TENANT, "api", chats[i], partitioner.partitionOf(TENANT, "api", chats[i]),
                        "r" + i, "alice", "user", texts[i], null)).message().id();
                result(database.pool().preparedQuery("UPDATE inbox SET attempts = 1 WHERE id = $1").execute(Tuple.of(ids[i])));
            }
        });
        // when the first one's model call was answered and its commit waits
        io.clawfleet.shared.testing.Await.until("the first restarted turn's model call", java.time.Duration.ofSeconds(30),
                () -> lock[0] != null && model.requestCount() - before >= 1);
        sleep(1_500);
        // then the second one has not asked the model yet: a poison message there could kill the worker before the
        // first one's commit, and count it as started by one more owner that died
        assertThat(model.requestCount() - before).isEqualTo(1);
        // and once the first one commits, the second one runs: both chats are answered
        result(lock[0].rollback().eventually(() -> locker[0].close()));
        assertThat(replies(chats[0], 1).get(0)).doesNotContain("could not answer");
        assertThat(replies(chats[1], 1).get(0)).doesNotContain("could not answer");
        assertThat(model.requestCount() - before).isEqualTo(2);
    }

    @Test
    void aPartitionClaimedStraightBackAfterItsLeaseLapsedRetriesItsTurnsAsItsOwn() {
        // given a turn under way, its model call held
        InboundMessage message = turnUnderWayThenLeaseLost(false);
        // then the worker that claimed the partition straight back (no owner between) retried the turn as its own:
        // no restart counted (counted, an outage or two more would dead-letter an innocent message as poison); the
        // commit counts the one start that finished
        assertThat(replies(message.chatKey(), 1)).hasSize(1);
        assertThat(stored("SELECT attempts FROM inbox WHERE id = " + message.id())).isEqualTo("1\n");
    }

    @Test
    void aPartitionThatHadAnotherOwnerBetweenCountsItsTurnsAsRestarts() {
        // given a turn under way, its model call held, when another owner had the partition before this worker got it back
        InboundMessage message = turnUnderWayThenLeaseLost(true);
        // then the message counts as started by an owner that went away: it may be what killed that owner (one
        // restart, and the start that finished)
        assertThat(replies(message.chatKey(), 1)).hasSize(1);
        assertThat(stored("SELECT attempts FROM inbox WHERE id = " + message.id())).isEqualTo("2\n");
    }

    /**
     * Starts a turn and holds its model call while the worker loses the partition's lease (as when the database was away
     * past the lease) and claims it again; {@code ownerBetween} bumps the epoch as another owner's claim would. The held
     * call then ends: its turn is fenced, and must not take the new claim with it. Returns the message, answered.
     */
    private InboundMessage turnUnderWayThenLeaseLost(boolean ownerBetween) {
        startWorker(Map.of());
        String chat = "lapsed-" + UUID.randomUUID();
        servedPartitionOf(chat);
        io.vertx.core.Promise<Void> held = io.vertx.core.Promise.promise();
        boolean[] first = {true};
        model.beforeAnswer(body -> {
            if (body.encode().contains("lapsed hello") && first[0]) {
                first[0] = false;
                return held.future();
            }
            return io.vertx.core.Future.succeededFuture();
        });
        long before = model.requestCount();
        InboundMessage message = send(chat, "lapsed hello");
        int partition = message.partition();
        io.clawfleet.shared.testing.Await.until("the turn's model call", java.time.Duration.ofSeconds(30),
                () -> model.requestCount() - before >= 1);
        long epoch = epoch(partition);
        // when the lease is gone (released as a lapsed one is; with an owner between, at the next epoch)
        result(database.pool().preparedQuery("UPDATE partition_leases SET owner_node = NULL, expires_at = '-infinity', "
                + "epoch = epoch + $2 WHERE partition = $1").execute(Tuple.of(partition, ownerBetween ? 1 : 0)));
        long claimed = epoch + (ownerBetween ? 2 : 1);
        // and the worker claimed it back and started the turn again
        io.clawfleet.shared.testing.Await.until("the partition claimed back", java.time.Duration.ofSeconds(30),
                () -> epoch(partition) == claimed && model.requestCount() - before >= 2);
        replies(chat, 1);
        // and the first turn's model call ends: that turn is fenced off
        held.complete();
        sleep(1_500);
        // then the worker still holds the partition at the epoch it claimed, and serves it
        assertThat(epoch(partition)).isEqualTo(claimed);
        String next = "lapsed-next-" + UUID.randomUUID();
        while (partitioner.partitionOf(TENANT, "api", next) != partition) {
            next = "lapsed-next-" + UUID.randomUUID();
        }
        assertThat(ask(next, "hello again", 1)).doesNotContain("could not answer");
        assertThat(epoch(partition)).isEqualTo(claimed);
        assertThat(stored("SELECT count(*) FROM outbox WHERE in_reply_to = " + message.id())).isEqualTo("1\n");
        return message;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The worker's count of execution-ledger reads, from its /metrics. */
    private double ledgerReads() throws Exception {
        var http = java.net.http.HttpClient.newHttpClient();
        String text = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:"
                        + agent.worker.httpPort() + "/metrics")).header("authorization", "Bearer " + AgentFixture.METRICS_KEY)
                .build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        return Prometheus.sum(text, "clawfleet_ledger_reads_total");
    }

    @Test
    void aToolOutputIsCutAtFiftyThousandCharactersByDefault() {
        startWorker(Map.of());
        // given a workspace file longer than the cap
        result(new WorkspaceStore(database.pool()).write(BotRef.main(TENANT), "notes/big.md", "x".repeat(60_000)));
        // when the model reads it
        String reply = ask("big-" + UUID.randomUUID(), "call:fs_read {\"path\":\"notes/big.md\"}", 1);
        // then it got the first 50,000 characters and a note of what was cut
        assertThat(reply).isEqualTo("tool fs_read said: " + "x".repeat(50_000) + "\n[output truncated: 10000 more characters]");
    }

    @Test
    void anErrorIsCutAtTheOutputCapToo() {
        startWorker(Map.of("agent.maxToolOutputChars", "100"));
        // when the model calls a tool that does not exist (the error lists every tool: well over 100 characters)
        String reply = ask("err-" + UUID.randomUUID(), "call:no_such_tool {}", 1);
        // then the error it is given is capped like any output
        String error = reply.substring("tool no_such_tool said: ".length());
        assertThat(error).startsWith("error (invalid_args): there is no tool named 'no_such_tool'")
                .contains("[output truncated: ");
        assertThat(error.substring(0, error.indexOf("\n[output truncated"))).hasSize(100);
    }

    @Test
    void aWorkspaceFileHoldingAConfiguredProviderKeyIsReadRedacted() {
        String key = "provider-key-0123456789abcdef";
        startWorker(Map.of("llm.apiKey", key));
        // given a file holding the worker's provider key (not shaped like any known key: only its value can match)
        result(new WorkspaceStore(database.pool()).write(BotRef.main(TENANT), "notes/keys.md", "the key is " + key + " here"));
        // when the model reads it
        String reply = ask("keys-" + UUID.randomUUID(), "call:fs_read {\"path\":\"notes/keys.md\"}", 1);
        // then neither the model, the chat nor the history got the key
        assertThat(reply).isEqualTo("tool fs_read said: the key is [REDACTED] here");
        assertThat(model.lastRequestBody()).doesNotContain(key);
        assertThat(stored("SELECT content FROM messages")).contains("the key is [REDACTED] here").doesNotContain(key);
    }

    @Test
    void modelAnswersAreScrubbedOfSecretsBeforeTheyAreStored() {
        startWorker(Map.of());
        String chat = "scrub-" + UUID.randomUUID();
        String reply = ask(chat, "my key is sk-proj-abcdefghijklmnopqrstuvwx please", 1);
        assertThat(reply).isEqualTo("echo: my key is [REDACTED] please");
    }

    @Test
    void aRecordedCallThatLostASecretIsAskedForAgainNotReplayedBlank() {
        startWorker(Map.of());
        String chat = "ledger-secret-" + UUID.randomUUID();
        // given a turn that crashed after its model step was recorded with a secret blanked from the call
        servedPartitionOf(chat);
        InboundMessage message = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), "m1",
                "alice", "user", "call:message_send {\"chat_id\":\"" + chat + "\",\"content\":\"the real text\"}",
                null)).message();
        Fence fence = new Fence(message.partition(), "w1", epoch(message.partition()));
        JsonObject call = new JsonObject().put("id", "call_1").put("name", "message_send")
                .put("arguments", new JsonObject().put("chat_id", chat).put("content", "[REDACTED]").encode());
        result(new TurnStepStore(database.pool()).record(fence, message.id(), TENANT, 0, "model", new JsonObject()
                .put("calls", new JsonArray().add(call)).put("redacted", true).put("model", "mock")));
        long before = model.requestCount();
        // when the worker is restarted and runs the turn again
        agent.restartWorker();
        // then the model is asked again and the call runs as it asks, not with the blanked text
        assertThat(replies(chat, 2)).contains("the real text").noneMatch(text -> text.contains("[REDACTED]"));
        assertThat(model.requestCount() - before).isEqualTo(2);
    }

    /**
     * Waits until the worker serves the partition of {@code chat} and has scanned its inbox (a
     * neighbour's message was answered), so a message accepted after this is not picked up before
     * its wake-up (nor by the sweep, for two seconds): a test can set up its ledger in between.
     */
    /** A message of {@code chat}, on a worker that serves its partition, whose turn was counted restarted twice. */
    private InboundMessage restartedTwice(String chat) {
        startWorker(Map.of());
        servedPartitionOf(chat);
        InboundMessage message = result(inbox.accept(TENANT, "api", chat, partitioner.partitionOf(TENANT, "api", chat), "m1",
                "alice", "user", "hello", null)).message();
        result(database.pool().preparedQuery("UPDATE inbox SET attempts = 2 WHERE id = $1").execute(Tuple.of(message.id())));
        return message;
    }

    private void servedPartitionOf(String chat) {
        int partition = partitioner.partitionOf(TENANT, "api", chat);
        String neighbour;
        do {
            neighbour = "neighbour-" + UUID.randomUUID();
        } while (partitioner.partitionOf(TENANT, "api", neighbour) != partition);
        ask(neighbour, "hello", 1);
    }

    /** The first column of every row, joined: to check what a table holds. */
    private String stored(String sql) {
        StringBuilder out = new StringBuilder();
        result(database.pool().query(sql).execute()).forEach(row -> out.append(row.getValue(0)).append('\n'));
        return out.toString();
    }

    private long epoch(int partition) {
        return result(database.pool().preparedQuery("SELECT epoch FROM partition_leases WHERE partition = $1")
                .execute(Tuple.of(partition))).iterator().next().getLong(0);
    }
}
