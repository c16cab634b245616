package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.store.ApprovalStore;
import io.clawfleet.shared.store.ApprovalStore.Decision;
import io.clawfleet.shared.store.ApprovalStore.Outcome;
import io.clawfleet.shared.store.TurnCommit;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;

/**
 * Approvals as chats see them (issue 22). A supervised bot's risky call waits under a public id with
 * the hash of exactly what it would run and an expiry; the asking chat is told so and may withdraw it
 * ({@code /no}) but never approve it. An admin sender in another chat lists waiting calls
 * ({@code /approvals}) and decides on one by id ({@code /approve ID}, {@code /approve-always ID},
 * {@code /deny ID}); the tenant's API does the same naming the hash. These commands are carried out
 * here, never by the model, so nothing a prompt says can approve a call.
 */
final class ApprovalCommands {

    private static final String ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";
    private static final int ID_LENGTH = 10;
    private static final int LISTED = 20;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final AgentLoop.Approvals approvals;

    ApprovalCommands(AgentLoop.Approvals approvals) {
        this.approvals = Objects.requireNonNull(approvals);
    }

    /** Whether a message is one of the approval commands (any chat may send one; only admins are obeyed). */
    static boolean isCommand(String text) {
        String lower = text.strip().toLowerCase(Locale.ROOT);
        return lower.equals("/approvals") || lower.startsWith("/approve ") || lower.startsWith("/approve-always ")
                || lower.startsWith("/deny ");
    }

    /** Carries out a command; completes with the answer to show in the chat. */
    Future<String> handle(InboundMessage message, boolean admin) {
        if (!admin) {
            return Future.succeededFuture("Only an admin may list or decide approvals, and never in the chat that asked.");
        }
        String[] words = message.text().strip().split("\\s+");
        String command = words[0].toLowerCase(Locale.ROOT);
        if (command.equals("/approvals")) {
            return approvals.waiting(message.bot()).map(ApprovalCommands::listing);
        }
        if (words.length != 2) {
            return Future.succeededFuture("Usage: " + command + " APPROVAL_ID (see /approvals)");
        }
        Decision decision = switch (command) {
            case "/approve" -> Decision.APPROVE;
            case "/approve-always" -> Decision.ALWAYS;
            default -> Decision.DENY;
        };
        String id = words[1];
        String by = "admin " + message.senderId() + " in " + message.channel() + ":" + message.chatKey();
        return approvals.decide(message.bot(), id, decision, by, message.chatId())
                .map(outcome -> switch (outcome) {
                    case Outcome.Decided decided -> (decision == Decision.DENY ? "Refused " : "Approved ")
                            + decided.call().tool() + " in " + decided.call().channel() + ":" + decided.call().chatKey()
                            + " (" + id + ")" + (decision == Decision.ALWAYS ? ", and for that chat from now on." : ".");
                    case Outcome.NotFound n -> "No call waits under " + id + " (it may have been answered or cancelled).";
                    case Outcome.Expired expired -> "The call " + id + " expired at " + expired.at() + "; it can no longer be approved.";
                    case Outcome.AlreadyDecided already -> "The call " + id + " was already decided (" + already.decision()
                            + ") by " + already.by() + ".";
                    case Outcome.Mismatch m -> "The call " + id + " is not the one named.";
                    case Outcome.OwnChat o -> "A call cannot be decided from the chat that asked for it; another admin must.";
                });
    }

    /** What the asking chat is told when it answers its own call's question. */
    static String stillWaiting(TurnCommit.PendingApproval pending) {
        return "The request to run " + pending.tool() + " (" + pending.approvalId() + ") waits for an admin's approval "
                + "until " + pending.expiresAt() + "; it cannot be approved from this chat. Reply /no to withdraw it.";
    }

    /** The question a paused turn leaves in its chat. */
    static String question(String tool, JsonObject args, String approvalId, String argsHash, Instant expiresAt) {
        String shown = args.encode();
        return "Running " + tool + " " + (shown.length() > 500 ? shown.substring(0, 500) + "..." : shown)
                + " needs an admin's approval (approval id " + approvalId + ", arguments hash " + argsHash.substring(0, 12)
                + ", expires " + expiresAt + "). An admin approves it with /approve " + approvalId
                + " in an admin chat, or through the API (POST /api/v1/approvals/" + approvalId + "). Reply /no to withdraw it.";
    }

    private static String listing(java.util.List<ApprovalStore.Waiting> waiting) {
        if (waiting.isEmpty()) {
            return "No calls wait for approval.";
        }
        StringBuilder out = new StringBuilder("Calls waiting for approval:");
        waiting.stream().limit(LISTED).forEach(call -> {
            String args = call.arguments().encode();
            out.append("\n- ").append(call.approvalId()).append(": ").append(call.tool()).append(' ')
                    .append(args.length() > 300 ? args.substring(0, 300) + "..." : args)
                    .append(" in ").append(call.channel()).append(':').append(call.chatKey())
                    .append(", asked by ").append(call.requestedBy()).append(", expires ").append(call.expiresAt())
                    .append(call.decision() == null ? "" : " (decided: " + call.decision() + ")");
        });
        if (waiting.size() > LISTED) {
            out.append("\n(and ").append(waiting.size() - LISTED).append(" more; GET /api/v1/approvals lists all)");
        }
        return out.append("\nDecide with /approve ID, /approve-always ID or /deny ID.").toString();
    }

    /** A fresh public id: 10 characters of an unambiguous alphabet, about 50 bits. */
    static String newId() {
        StringBuilder id = new StringBuilder(ID_LENGTH);
        for (int i = 0; i < ID_LENGTH; i++) {
            id.append(ALPHABET.charAt(RANDOM.nextInt(ALPHABET.length())));
        }
        return id.toString();
    }

    /** SHA-256 of the tool, the call's id and its (stored, redacted) arguments: what an approval names. */
    static String argsHash(String tool, String callId, JsonObject args) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update((tool + "\u0000" + callId + "\u0000" + args.encode()).getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
