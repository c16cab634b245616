package io.clawfleet.gateway.export;

import java.util.List;

/**
 * What a tenant export holds, entry by entry, in archive order (the format is documented in
 * docs/TENANTS.md, "Export"). Each JSON-lines entry is one statement that renders every row as a
 * JSON object in PostgreSQL, so the gateway copies text and never builds a tree per row. Every
 * statement filters by the tenant ({@code $1}) on each table it reads; secrets (key digests, bot
 * tokens, provider keys) are never selected. Timestamps are ISO 8601 in UTC (the transaction sets the time zone).
 * The history tables have no index by tenant: they are reached chat by chat (a lateral join on the
 * chat's index), so a small tenant's export never scans the whole cluster's messages.
 */
final class ExportSections {

    /** One JSON-lines entry of the archive: its path, the rows fetched per round trip, its statement. */
    record Section(String path, int fetchSize, String sql) {
    }

    /** A bot's folder in the archive. */
    static String botDir(String botId) {
        return "bots/" + botId + "/";
    }

    static final String TENANT = """
            SELECT json_build_object('id', id, 'name', name, 'status', status, 'timeZone', time_zone,
                     'createdAt', created_at, 'updatedAt', updated_at)::text AS j,
                   to_json(now())#>>'{}' AS exported_at
              FROM tenants WHERE id = $1""";

    /** The tenant's bots, in id order: each has a folder of its own. */
    static final String BOT_IDS = "SELECT id FROM bots WHERE tenant_id = $1 ORDER BY id";

    /** The files themselves; a file is at most 1 MiB, so few are fetched at a time. */
    static final String WORKSPACE_FILES = """
            SELECT path, content FROM workspace_files WHERE tenant_id = $1 AND bot_id = $2 ORDER BY path COLLATE "C\"""";
    static final int WORKSPACE_FETCH = 8;

    /** Entries of the whole tenant, before the bots' folders. */
    static final List<Section> TENANT_FIRST = List.of(
            new Section("keys.jsonl", 256, """
                    SELECT json_build_object('id', id, 'prefix', prefix, 'name', name, 'scopes', scopes,
                             'botIds', bot_ids, 'messagesPerMinute', messages_per_minute, 'createdAt', created_at,
                             'lastUsedAt', last_used_at,
                             'expiresAt', expires_at, 'revokedAt', revoked_at)::text
                      FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id"""),
            new Section("bots.jsonl", 256, """
                    SELECT json_build_object('id', id, 'name', name, 'status', status, 'settings', settings,
                             'workspaceSeededAt', workspace_seeded_at, 'createdAt', created_at,
                             'updatedAt', updated_at)::text
                      FROM bots WHERE tenant_id = $1 ORDER BY id"""));

    /**
     * A bot's entries before its workspace files, paths relative to its folder; {@code $2} is the bot. Chats
     * are the bot's; what hangs off a chat is reached through the bot's chats.
     */
    static final List<Section> BOT_BEFORE_WORKSPACE = List.of(
            new Section("channels.jsonl", 256, """
                    SELECT json_build_object('id', id, 'channel', channel, 'name', name, 'apiUrl', api_url,
                             'enabled', enabled, 'updateOffset', update_offset, 'mode', mode, 'webhookUrl', webhook_url,
                             'dmPolicy', dm_policy, 'groupPolicy', group_policy, 'createdAt', created_at,
                             -- a web chat's publishable key is public (it is in the site's pages), its origins settings
                             'publishableKey', CASE WHEN channel = 'webchat' THEN 'pk_' || id || '_' || account_user_id END,
                             'allowedOrigins', allowed_origins, 'anonymousUsers', anonymous_users)::text
                      FROM channel_bots WHERE tenant_id = $1 AND bot_id = $2 ORDER BY id"""),
            // its signed webhook endpoints: never their secrets (those stay sealed); deliveries are its events again, left out
            new Section("webhooks.jsonl", 16, """
                    SELECT json_build_object('id', id, 'url', url, 'events', events, 'description', description,
                             'secretHint', secret_hint, 'enabled', enabled, 'disabledReason', disabled_reason,
                             'createdAt', created_at)::text
                      FROM webhook_endpoints WHERE tenant_id = $1 AND bot_id = $2 ORDER BY id"""),
            // who may talk to the bot: allowed senders (pending codes are short-lived secrets, left out)
            new Section("channel-senders.jsonl", 1_000, """
                    SELECT json_build_object('channelId', channel_bot_id, 'senderId', sender_id, 'createdAt', created_at,
                             'approvedAt', approved_at)::text
                      FROM channel_senders WHERE tenant_id = $1 AND bot_id = $2 AND status = 'allowed'
                     ORDER BY channel_bot_id, sender_id"""),
            // the bot's own model providers: their settings and key hints, never a key (those stay sealed)
            new Section("providers.jsonl", 16, """
                    SELECT json_build_object('version', version, 'providers', config -> 'providers', 'roles', config -> 'roles',
                             'updatedAt', updated_at)::text
                      FROM bot_providers WHERE tenant_id = $1 AND bot_id = $2"""),
            // the bot's remote MCP servers: their settings and header hints, never a header's value (those stay sealed)
            new Section("mcp-servers.jsonl", 16, """
                    SELECT json_build_object('version', version, 'servers', config -> 'servers', 'updatedAt', updated_at)::text
                      FROM bot_mcp_servers WHERE tenant_id = $1 AND bot_id = $2"""),
            // messages a channel brought while the tenant was over a quota, waiting for a replay
            new Section("deferred.jsonl", 256, """
                    SELECT json_build_object('id', id, 'channel', channel, 'chatKey', chat_key, 'senderId', sender_id,
                             'text', text, 'reason', reason, 'receivedAt', received_at)::text
                      FROM deferred_messages WHERE tenant_id = $1 AND bot_id = $2 ORDER BY id"""),
            new Section("workspace.jsonl", 256, """
                    SELECT json_build_object('path', path, 'version', version, 'size', octet_length(content),
                             'sha256', encode(sha256(convert_to(content, 'UTF8')), 'hex'), 'updatedAt', updated_at)::text
                      FROM workspace_files WHERE tenant_id = $1 AND bot_id = $2 ORDER BY path COLLATE "C\""""));

    /** A bot's entries after its workspace files. */
    static final List<Section> BOT_AFTER_WORKSPACE = List.of(
            new Section("chats.jsonl", 256, """
                    SELECT json_build_object('id', c.id, 'channel', c.channel, 'chatKey', c.chat_key,
                             'partition', c.partition, 'displayName', c.display_name, 'role', c.role,
                             'registered', c.registered, 'inSeq', c.in_seq, 'createdAt', c.created_at,
                             'lastMessageAt', c.last_message_at,
                             'state', (SELECT json_build_object('doneSeq', s.done_seq, 'replySeq', s.reply_seq,
                                         'summary', s.summary, 'enabledSkills', s.enabled_skills,
                                         'disabledSkills', s.disabled_skills, 'alwaysAllowed', s.always_allowed,
                                         'consolidatedThrough', s.consolidated_through,
                                         'lastCompactAt', s.last_compact_at, 'updatedAt', s.updated_at)
                                         FROM conversation_state s WHERE s.chat_id = c.id AND s.tenant_id = $1),
                             'admins', (SELECT coalesce(json_agg(json_build_object('senderId', a.sender_id,
                                          'grantedAt', a.granted_at) ORDER BY a.sender_id), '[]'::json)
                                          FROM chat_admins a WHERE a.chat_id = c.id AND a.tenant_id = $1))::text
                      FROM chats c WHERE c.tenant_id = $1 AND c.bot_id = $2 ORDER BY c.id"""),
            new Section("inbox.jsonl", 512, """
                    SELECT json_build_object('id', i.id, 'chat', i.chat_id, 'seq', i.seq,
                             'idempotencyKey', i.idempotency_key, 'senderId', i.sender_id, 'kind', i.kind,
                             'text', i.text, 'metadata', i.metadata, 'status', i.status, 'attempts', i.attempts,
                             'modelRole', i.model_role, 'contextMode', i.context_mode,
                             'receivedAt', i.received_at, 'doneAt', i.done_at)::text
                      FROM chats c CROSS JOIN LATERAL
                           (SELECT * FROM inbox i WHERE i.chat_id = c.id AND i.tenant_id = $1 ORDER BY i.seq) i
                     WHERE c.tenant_id = $1 AND c.bot_id = $2 ORDER BY c.id, i.seq"""),
            new Section("messages.jsonl", 512, """
                    SELECT json_build_object('id', m.id, 'chat', m.chat_id, 'inboxId', m.inbox_id, 'role', m.role,
                             'senderId', m.sender_id, 'content', m.content, 'toolCalls', m.tool_calls,
                             'toolCallId', m.tool_call_id, 'createdAt', m.created_at)::text
                      FROM chats c CROSS JOIN LATERAL
                           (SELECT * FROM messages m WHERE m.chat_id = c.id AND m.tenant_id = $1 ORDER BY m.id) m
                     WHERE c.tenant_id = $1 AND c.bot_id = $2 ORDER BY c.id, m.id"""),
            new Section("outbox.jsonl", 512, """
                    SELECT json_build_object('id', o.id, 'chat', o.chat_id, 'seq', o.seq, 'inReplyTo', o.in_reply_to,
                             'text', o.text, 'status', o.status, 'push', o.push, 'attempts', o.attempts,
                             'nextAttemptAt', o.next_attempt_at, 'lastError', o.last_error,
                             'createdAt', o.created_at, 'deliveredAt', o.delivered_at)::text
                      FROM chats c CROSS JOIN LATERAL
                           (SELECT * FROM outbox o WHERE o.chat_id = c.id AND o.tenant_id = $1 ORDER BY o.seq) o
                     WHERE c.tenant_id = $1 AND c.bot_id = $2 ORDER BY c.id, o.seq"""),
            new Section("approvals.jsonl", 256, """
                    SELECT json_build_object('id', approval_id, 'chat', chat_id, 'inboxId', inbox_id, 'tool', tool,
                             'callId', call_id, 'arguments', arguments, 'argsHash', args_hash, 'state', state,
                             'requestedBy', requested_by, 'createdAt', created_at, 'expiresAt', expires_at,
                             'decision', decision, 'decidedBy', decided_by, 'decidedAt', decided_at)::text
                      FROM pending_approvals
                     WHERE tenant_id = $1 AND chat_id IN (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $2)
                     ORDER BY created_at, approval_id"""),
            new Section("turn_steps.jsonl", 256, """
                    SELECT json_build_object('inboxId', inbox_id, 'step', step, 'kind', kind, 'payload', payload,
                             'createdAt', created_at)::text
                      FROM turn_steps
                     WHERE tenant_id = $1 AND inbox_id IN (SELECT i.id FROM inbox i JOIN chats c ON c.id = i.chat_id
                                                            WHERE c.tenant_id = $1 AND c.bot_id = $2)
                     ORDER BY inbox_id, step"""),
            new Section("tasks.jsonl", 256, """
                    SELECT json_build_object('id', id, 'chat', chat_id, 'kind', kind, 'prompt', prompt,
                             'scheduleType', schedule_type, 'scheduleValue', schedule_value, 'timeZone', time_zone,
                             'contextMode', context_mode, 'status', status, 'missedPolicy', missed_policy,
                             'nextRunAt', next_run_at, 'createdAt', created_at, 'updatedAt', updated_at)::text
                      FROM tasks
                     WHERE tenant_id = $1 AND chat_id IN (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $2)
                     ORDER BY created_at, id"""),
            new Section("task_runs.jsonl", 512, """
                    SELECT json_build_object('id', r.id, 'task', r.task_id, 'dueAt', r.due_at, 'inboxId', r.inbox_id,
                             'startedAt', r.started_at, 'durationMs', r.duration_ms, 'status', r.status,
                             'resultPreview', r.result_preview, 'error', r.error)::text
                      FROM tasks t CROSS JOIN LATERAL
                           (SELECT * FROM task_runs r WHERE r.task_id = t.id AND r.tenant_id = $1 ORDER BY r.due_at) r
                     WHERE t.tenant_id = $1 AND t.chat_id IN (SELECT id FROM chats WHERE tenant_id = $1 AND bot_id = $2)
                     ORDER BY t.id, r.due_at"""));

    /** Entries of the whole tenant, after the bots' folders: what stays with the tenant when a bot goes. */
    static final List<Section> TENANT_LAST = List.of(
            new Section("usage.jsonl", 512, """
                    SELECT json_build_object('id', id, 'bot', bot_id, 'chat', chat_id, 'inboxId', inbox_id, 'provider', provider,
                             'model', model, 'inputTokens', input_tokens, 'outputTokens', output_tokens,
                             'key', api_key_id, 'createdAt', created_at)::text
                      FROM llm_usage WHERE tenant_id = $1 ORDER BY id"""),
            new Section("usage_messages.jsonl", 128, """
                    SELECT json_build_object('day', day, 'bot', bot_id, 'key', nullif(key_id, ''), 'messages', messages)::text
                      FROM usage_messages_daily WHERE tenant_id = $1 ORDER BY day, bot_id, key_id"""),
            new Section("usage_calls.jsonl", 256, """
                    SELECT json_build_object('day', day, 'bot', bot_id, 'provider', nullif(provider, ''), 'model', model,
                             'key', nullif(key_id, ''), 'calls', calls, 'turns', turns, 'inputTokens', input_tokens,
                             'outputTokens', output_tokens, 'cachedTokens', cached_tokens, 'costMicros', cost_micros,
                             'unpricedCalls', unpriced)::text
                      FROM usage_calls_daily WHERE tenant_id = $1 ORDER BY day, bot_id, provider, model, key_id"""),
            new Section("audit.jsonl", 512, """
                    SELECT json_build_object('id', id, 'at', at, 'type', event_type, 'outcome', outcome, 'bot', bot_id,
                             'tool', tool_name, 'chat', chat_id, 'channel', channel, 'chatKey', chat_key,
                             'actorRole', actor_role, 'reason', reason, 'args', args_json, 'metadata', metadata_json,
                             'keyId', key_id, 'keyName', key_name, 'httpMethod', http_method, 'route', route,
                             'status', status_code, 'errorId', error_id)::text
                      FROM audit_events WHERE tenant_id = $1 ORDER BY id"""),
            new Section("dead_letters.jsonl", 256, """
                    SELECT json_build_object('id', id, 'kind', kind, 'refId', ref_id, 'chat', chat_id,
                             'payload', payload, 'error', error, 'attempts', attempts, 'createdAt', created_at,
                             'replayedAt', replayed_at)::text
                      FROM dead_letters WHERE tenant_id = $1 ORDER BY id"""));

    private ExportSections() {
    }
}
