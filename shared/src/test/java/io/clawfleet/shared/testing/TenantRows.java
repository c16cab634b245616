package io.clawfleet.shared.testing;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Rows of a tenant in every table that has a tenant_id, and their count per table (tests of tenant deletion). */
public final class TenantRows {

    /** The table that keeps a deletion's tombstone: its rows outlive the tenant on purpose. */
    public static final String TOMBSTONES = "tenant_deletions";

    private TenantRows() {
    }

    /**
     * Gives the tenant (created when missing) one chat with {@code inboxRows} inbox rows, {@code messageRows}
     * history rows, and at least one row in every other table that carries a tenant_id.
     */
    public static Future<Void> seed(Pool pool, String tenantId, int inboxRows, int messageRows) {
        if (!tenantId.matches("[a-z0-9-]+")) {
            throw new IllegalArgumentException(tenantId);
        }
        var master = TestSecrets.masterKeys().current();
        String sql = """
                DO $$
                DECLARE t text := '%1$s'; c bigint; i bigint;
                BEGIN
                  INSERT INTO tenants (id, name) VALUES (t, t) ON CONFLICT (id) DO NOTHING;
                  INSERT INTO api_keys (key_hash, tenant_id, id, prefix)
                       VALUES (md5(t) || md5(t || 'x'), t, 'k' || left(md5(t), 11), 'cf_seed');
                  INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES (t, 'api', 'seeded', 0) RETURNING id INTO c;
                  INSERT INTO conversation_state (chat_id, tenant_id) VALUES (c, t);
                  INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, text, status)
                       SELECT t, c, 0, g, 'm' || g, 'u1', 'hello', 'done' FROM generate_series(1, %2$d) g;
                  SELECT min(id) INTO i FROM inbox WHERE chat_id = c;
                  INSERT INTO messages (tenant_id, chat_id, inbox_id, role, content)
                       SELECT t, c, i, 'user', 'hello ' || g FROM generate_series(1, %3$d) g;
                  INSERT INTO outbox (id, tenant_id, chat_id, seq, in_reply_to, text) VALUES (t || '-o1', t, c, 1, i, 'hi');
                  INSERT INTO tasks (id, tenant_id, chat_id, prompt, schedule_type, schedule_value)
                       VALUES (t || '-task', t, c, 'ping', 'interval', '3600000');
                  INSERT INTO task_runs (tenant_id, task_id, due_at) VALUES (t, t || '-task', now());
                  INSERT INTO audit_events (tenant_id, event_type, outcome) VALUES (t, 'tool_call', 'success');
                  INSERT INTO llm_usage (tenant_id, chat_id, model, input_tokens, output_tokens) VALUES (t, c, 'm', 1, 1);
                  INSERT INTO usage_messages_daily (tenant_id, day, bot_id, key_id, messages)
                       VALUES (t, current_date - 30, 'main', '', 3);
                  INSERT INTO usage_calls_daily (tenant_id, day, bot_id, provider, model, key_id, calls, turns, input_tokens,
                                                 output_tokens, cached_tokens, cost_micros, unpriced)
                       VALUES (t, current_date - 40, 'main', 'p', 'm', '', 2, 1, 10, 5, 0, NULL, 2);
                  INSERT INTO dead_letters (tenant_id, kind, ref_id, payload, error) VALUES (t, 'inbound', t || '-dl', '{}', 'e');
                  INSERT INTO tenant_data_keys (tenant_id, key_id, wrapped_key, master_key_id)
                       VALUES (t, 1, '\\x%4$s'::bytea, '%5$s');
                  INSERT INTO channel_bots (tenant_id, channel, name, token, token_hash, api_url)
                       VALUES (t, 'telegram', 'seeded_bot', '1:seeded', t || '-token', 'http://127.0.0.1:9');
                  INSERT INTO webhook_endpoints (tenant_id, bot_id, url, events, secret_enc, secret_key_id, secret_hint, enabled)
                       VALUES (t, 'main', 'https://example.com/seeded', ARRAY['message.received'], '\\x00'::bytea, 1, 'whsec_…seed',
                               false);
                  INSERT INTO webhook_deliveries (id, tenant_id, bot_id, endpoint_id, event_type, payload)
                       SELECT 'msg_seeded_' || t, t, 'main', id, 'message.received', '{}' FROM webhook_endpoints WHERE tenant_id = t;
                  INSERT INTO channel_senders (channel_bot_id, tenant_id, bot_id, sender_id, status)
                       SELECT id, t, 'main', 'u1', 'allowed' FROM channel_bots WHERE token_hash = t || '-token';
                  INSERT INTO channel_send_pacing (account_id, tenant_id, scope, tat)
                       SELECT id, t, '', now() FROM channel_bots WHERE token_hash = t || '-token';
                  INSERT INTO pending_approvals (chat_id, tenant_id, inbox_id, tool, call_id, arguments, state, approval_id,
                                                 args_hash, requested_by, expires_at)
                       VALUES (c, t, i, 'shell_exec', 'call-1', '{}', '{}', t || '-ap', 'h', 'u1', now() + interval '1 hour');
                  INSERT INTO chat_admins (chat_id, tenant_id, sender_id) VALUES (c, t, 'u1');
                  INSERT INTO turn_steps (inbox_id, step, tenant_id, kind, payload) VALUES (i, 1, t, 'model', '{}');
                  INSERT INTO workspace_files (tenant_id, path, content) VALUES (t, 'seeded/NOTES.md', 'x');
                  INSERT INTO bot_providers (tenant_id, bot_id, config) VALUES (t, 'main', '{"providers": {}, "roles": {}}');
                  INSERT INTO bot_mcp_servers (tenant_id, bot_id, config) VALUES (t, 'main', '{"servers": {}}');
                  INSERT INTO deferred_messages (tenant_id, bot_id, channel, chat_key, idempotency_key, sender_id, text, reason)
                       VALUES (t, 'main', 'telegram', 'seeded', 'u1', 'u1', 'later', 'tokensPerDay');
                  INSERT INTO deferred_notices (tenant_id, bot_id, channel, chat_key, period_end)
                       VALUES (t, 'main', 'telegram', 'seeded', now() + interval '1 day');
                  INSERT INTO tenant_rate_windows (tenant_id, window_start, granted, last_grant)
                  VALUES (t, date_trunc('minute', now()), 1, 1) ON CONFLICT DO NOTHING;
                  INSERT INTO tenant_turn_slots (tenant_id, holder, slots, expires_at) VALUES (t, 'w-seeded', 1, now());
                  INSERT INTO mcp_sessions (id, tenant_id, bot_id, key_id, protocol_version) VALUES (t || '-mcp', t, 'main', 'k', '2025-11-25');
                  INSERT INTO mcp_streams (id, session_id, tenant_id, bot_id, request_id, inbox_id)
                       VALUES (t || '-stream', t || '-mcp', t, 'main', '1', i);
                END $$""".formatted(tenantId, inboxRows, messageRows,
                // a data key wrapped by the test master key, so a gateway started on these rows opens it
                java.util.HexFormat.of().formatHex(io.clawfleet.shared.security.TenantKeys.wrap(master, tenantId, 1,
                        io.clawfleet.shared.security.SecretBox.newKey())), master.id());
        return pool.query(sql).execute().mapEmpty();
    }

    /** The tables of the schema with a tenant_id column, the tombstones excepted. */
    public static Future<List<String>> tables(Pool pool) {
        return pool.query("""
                        SELECT table_name FROM information_schema.columns
                         WHERE table_schema = current_schema() AND column_name = 'tenant_id' ORDER BY table_name""")
                .execute().map(rows -> {
                    List<String> out = new ArrayList<>();
                    for (Row row : rows) {
                        if (!TOMBSTONES.equals(row.getString(0))) {
                            out.add(row.getString(0));
                        }
                    }
                    return out;
                });
    }

    /** Rows of the tenant per table (every table with a tenant_id, and {@code tenants} itself). */
    public static Future<Map<String, Long>> count(Pool pool, String tenantId) {
        return tables(pool).compose(tables -> {
            StringBuilder sql = new StringBuilder("SELECT 'tenants' AS t, count(*) AS n FROM tenants WHERE id = $1");
            tables.forEach(table -> sql.append(" UNION ALL SELECT '").append(table).append("', count(*) FROM ")
                    .append(table).append(" WHERE tenant_id = $1"));
            return pool.preparedQuery(sql.toString()).execute(Tuple.of(tenantId));
        }).map(rows -> {
            Map<String, Long> out = new TreeMap<>();
            rows.forEach(row -> out.put(row.getString("t"), row.getLong("n")));
            return out;
        });
    }
}
