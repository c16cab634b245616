package io.clawfleet.worker.tools.builtin;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.workspace.Skill;
import io.clawfleet.worker.tools.FunctionTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.clawfleet.worker.workspace.WorkspaceSnapshot;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * {@code skills_list()}, {@code skills_read(name)}, {@code skills_enable(name)} and
 * {@code skills_disable(name)} (seed 000 §9): progressive loading, the prompt holds only each
 * skill's name and description and the model reads a body when it needs it; a chat may switch
 * skills off and on for itself.
 */
public final class SkillTools {

    /** The bot's MCP servers as {@code skills_list} shows them to a chat of the role. */
    @FunctionalInterface
    public interface McpNotes {
        Future<String> describe(BotRef bot, WorkspaceSnapshot snapshot, boolean admin);
    }

    private final WorkspaceCache cache;
    private final ChatStore chats;

    private final McpNotes mcpNotes;

    /**
     * @param mcpNotes what {@code skills_list} adds: the bot's MCP servers a chat of the role may use, their tools and
     *                 prompts or why they have none, "" for nothing; must not fail
     */
    public SkillTools(WorkspaceCache cache, ChatStore chats, McpNotes mcpNotes) {
        this.cache = Objects.requireNonNull(cache);
        this.chats = Objects.requireNonNull(chats);
        this.mcpNotes = Objects.requireNonNull(mcpNotes);
    }

    public List<Tool> tools() {
        return List.of(
                FunctionTool.reading(Schemas.tool("skills_list", "List skills.",
                        Schemas.required()), this::list),
                FunctionTool.reading(Schemas.tool("skills_read", "Read a skill's instructions.", Schemas.required("name"),
                        "name", null), this::read),
                FunctionTool.changing(Schemas.tool("skills_enable", "Turn a skill on in this chat.", Schemas.required("name"),
                        "name", null), (ctx, args) -> toggle(ctx, args.getString("name"), true)),
                FunctionTool.changing(Schemas.tool("skills_disable", "Turn a skill off in this chat.",
                        Schemas.required("name"), "name", null), (ctx, args) -> toggle(ctx, args.getString("name"), false)));
    }

    private Future<Skill> find(ToolCallContext ctx, String name) {
        return cache.snapshot(ctx.bot()).map(snapshot -> snapshot.skill(name).orElseThrow(() -> ToolException.error(
                "no skill named '" + name + "'" + (snapshot.skills().isEmpty() ? "; this bot has no skills"
                        : "; skills: " + String.join(", ", snapshot.skills().keySet())))));
    }

    private Future<String> list(ToolCallContext ctx, JsonObject args) {
        return Future.all(cache.snapshot(ctx.bot()), chats.disabledSkills(ctx.chatId())).compose(both -> {
            WorkspaceSnapshot snapshot = both.resultAt(0);
            String skills = skills(snapshot, both.resultAt(1));
            return mcpNotes.describe(ctx.bot(), snapshot, ctx.admin()).map(notes -> notes.isEmpty() ? skills : skills + "\n\n" + notes);
        });
    }

    private static String skills(WorkspaceSnapshot snapshot, Set<String> disabled) {
        if (snapshot.skills().isEmpty()) {
            return "This bot has no skills.";
        }
        StringBuilder out = new StringBuilder();
        for (Skill skill : snapshot.skills().values()) {
            out.append("- ").append(skill.name()).append(": ").append(skill.description());
            if (disabled.contains(skill.name())) {
                out.append(" [off in this chat]");
            } else if (skill.always()) {
                out.append(" [always loaded]");
            }
            snapshot.unavailable(skill.name()).ifPresent(why -> out.append(" [unavailable: ").append(why).append(']'));
            out.append('\n');
        }
        return out.toString().stripTrailing();
    }

    private Future<String> read(ToolCallContext ctx, JsonObject args) {
        String name = args.getString("name");
        return Future.all(find(ctx, name), chats.disabledSkills(ctx.chatId())).map(both -> {
            Skill skill = both.resultAt(0);
            Set<String> disabled = both.resultAt(1);
            if (disabled.contains(name)) {
                throw ToolException.error("the skill " + name + " is off in this chat; skills_enable turns it on");
            }
            return skill.body().isBlank() ? "(the skill " + name + " has no instructions)" : skill.body().strip();
        });
    }

    private Future<String> toggle(ToolCallContext ctx, String name, boolean enable) {
        return find(ctx, name)
                .compose(skill -> chats.setSkillDisabled(ctx.chatId(), ctx.tenantId(), name, !enable))
                .map(v -> "The skill " + name + " is now " + (enable ? "on" : "off") + " in this chat.");
    }
}
