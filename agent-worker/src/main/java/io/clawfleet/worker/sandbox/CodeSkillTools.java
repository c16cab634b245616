package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.workspace.CodeSkill;
import io.clawfleet.shared.workspace.CodeSkillParser;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.FunctionTool;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.workspace.WorkspaceSnapshot;
import io.vertx.core.eventbus.EventBus;
import io.clawfleet.worker.workspace.WorkspaceCache;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;

/**
 * The tools a tenant's code skills add (seed 004), as a source of the
 * {@link io.clawfleet.worker.tools.ToolCatalog}: each declared tool becomes {@code <skill>__<tool>}, run on a
 * sandbox node with the skill's own files and nothing else of the workspace. The worker sends no
 * environment: the variables a skill declares come from the sandbox node's allowed environment, so a
 * worker's secrets never travel. A tool declared read-only keeps no file changes.
 */
public final class CodeSkillTools implements Function<WorkspaceSnapshot, List<Tool>> {

    private static final Logger LOG = LoggerFactory.getLogger(CodeSkillTools.class);

    private final SandboxClient client;
    private final WriteBack writeBack;
    private final ClawfleetConfig.Sandbox config;

    public CodeSkillTools(SandboxClient client, WorkspaceCache cache, EventBus bus, ClawfleetConfig.Sandbox config) {
        this.client = Objects.requireNonNull(client);
        this.writeBack = new WriteBack(cache, bus);
        this.config = Objects.requireNonNull(config);
    }

    @Override
    public List<Tool> apply(WorkspaceSnapshot snapshot) {
        CodeSkillParser.CodeSkillSet set = CodeSkillParser.scan(snapshot.skillFiles(), config.maxTimeoutMs());
        set.problems().forEach(p -> LOG.info("code skill not offered [tenant: {}, file: {}]: {}", snapshot.tenantId(), p.path(),
                p.message()));
        set.notes().forEach(p -> LOG.info("code skill limited [tenant: {}, file: {}]: {}", snapshot.tenantId(), p.path(),
                p.message()));
        List<Tool> tools = new ArrayList<>();
        for (CodeSkill skill : set.skills()) {
            Map<String, String> files = files(snapshot, skill);
            for (CodeSkill.Tool tool : skill.tools()) {
                tools.add(tool(skill, tool, files));
            }
        }
        return tools;
    }

    private Tool tool(CodeSkill skill, CodeSkill.Tool tool, Map<String, String> files) {
        String name = skill.wireName(tool);
        ToolDefinition definition = new ToolDefinition(name, tool.description(), tool.parameters());
        long timeoutMs = timeoutMs(tool, config);
        boolean network = config.egress("skills");
        FunctionTool.Body body = (ctx, args) -> {
            ToolCall call = new ToolCall(UUID.randomUUID().toString(), ctx.tenantId(), ctx.chatId(), name, args.encode(),
                    files, Map.of(), timeoutMs, network, config.queueTimeoutMs()).withTraceParent(ctx.traceParent());
            return client.execute(call, !network)
                    .compose(result -> Results.skill(ctx, result, writeBack, !tool.readOnly()))
                    .recover(Results::unavailable);
        };
        return tool.readOnly() ? FunctionTool.reading(definition, body) : FunctionTool.changing(definition, body);
    }

    /** The run's wall-clock limit: the tool's own (already cut to the sandbox's longest), else {@code sandbox.skillTimeoutMs}. */
    static long timeoutMs(CodeSkill.Tool tool, ClawfleetConfig.Sandbox config) {
        return tool.timeoutMs() > 0 ? Math.min(tool.timeoutMs(), config.maxTimeoutMs()) : config.skillTimeoutMs();
    }

    /** The skill's folder and nothing else: a skill sees its own files only. */
    private static Map<String, String> files(WorkspaceSnapshot snapshot, CodeSkill skill) {
        String prefix = skill.folder() + "/";
        Map<String, String> files = new LinkedHashMap<>();
        for (WorkspaceFile file : snapshot.skillFiles()) {
            if (file.path().startsWith(prefix)) {
                files.put(file.path(), file.content());
            }
        }
        return files;
    }
}
