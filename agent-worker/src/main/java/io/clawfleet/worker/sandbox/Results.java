package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.vertx.core.Future;

import java.util.List;

/**
 * Turns a sandbox's {@link ToolResult} into what the model reads: the output of a run that finished
 * (whatever its exit code, since a failing command's output is what the model needs to see), or a
 * {@link ToolException} whose outcome the audit trail records (denied, invalid arguments, error).
 */
final class Results {

    private Results() {
    }

    /** A process run (shell, code skill): output, stderr, exit code, and the files it saved or could not. */
    static Future<String> process(ToolCallContext ctx, ToolResult result, WriteBack writeBack, List<String> notSent) {
        refuse(result);
        if (result.status().equals(ToolResult.TIMEOUT)) {
            return Future.failedFuture(ToolException.error("stopped at its time limit"
                    + (result.output().isBlank() ? "" : "; output so far:\n" + result.output())));
        }
        return writeBack.apply(ctx, result).map(saved -> {
            StringBuilder out = new StringBuilder(result.output().isEmpty() && result.stderr().isEmpty() ? "(no output)" : result.output());
            if (!result.stderr().isBlank()) {
                out.append(out.isEmpty() || out.charAt(out.length() - 1) == '\n' ? "" : "\n").append("[stderr]\n").append(result.stderr());
            }
            line(out, result.exitCode() > 0 ? "[exit code " + result.exitCode() + "]" : null);
            line(out, result.truncated() ? "[output cut at the sandbox's limit; the run was stopped there]" : null);
            line(out, saved.isEmpty() ? null : "[workspace: " + String.join("; ", saved) + "]");
            line(out, notSent.isEmpty() ? null : "[not in the run's copy (over sandbox.maxTransferBytes): "
                    + String.join(", ", notSent.subList(0, Math.min(20, notSent.size()))) + (notSent.size() > 20 ? ", ..." : "") + "]");
            return out.toString();
        });
    }

    /** A code skill: its JSON (seed 004 §4.5) is the result either way, so the model sees {"success":false,...} too. */
    static Future<String> skill(ToolCallContext ctx, ToolResult result, WriteBack writeBack, boolean keepFiles) {
        refuse(result);
        if (!result.ok()) {
            return Future.failedFuture(ToolException.error(result.output()));
        }
        if (!keepFiles) {
            return Future.succeededFuture(result.output());
        }
        return writeBack.apply(ctx, result).map(saved -> saved.isEmpty() ? result.output()
                : result.output() + "\n[workspace: " + String.join("; ", saved) + "]");
    }

    /** web_fetch and web_search: text, or a refusal. */
    static String web(ToolResult result) {
        refuse(result);
        if (!result.ok()) {
            throw ToolException.error(result.output());
        }
        return result.output();
    }

    /** The sandbox tier could not run the call at all: a clear error for the model. */
    static Future<String> unavailable(Throwable failure) {
        if (failure instanceof SandboxClient.SandboxUnavailable) {
            return Future.failedFuture(ToolException.error(failure.getMessage()));
        }
        return Future.failedFuture(failure);
    }

    private static void refuse(ToolResult result) {
        switch (result.status()) {
            case ToolResult.DENIED -> throw ToolException.denied(result.output());
            case ToolResult.INVALID_ARGS -> throw ToolException.invalid(result.output());
            case ToolResult.UNAVAILABLE -> throw ToolException.error(result.output());
            default -> {
            }
        }
    }

    private static void line(StringBuilder out, String text) {
        if (text != null) {
            out.append(out.isEmpty() || out.charAt(out.length() - 1) == '\n' ? "" : "\n").append(text);
        }
    }
}
