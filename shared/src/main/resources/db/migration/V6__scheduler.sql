-- Scheduled tasks (issue 6): what the scheduler needs beyond the tasks and task_runs of V1.

-- A task fires its prompt, or is a heartbeat: it reads HEARTBEAT.md and acts on it (seed 002).
ALTER TABLE tasks ADD COLUMN kind text NOT NULL DEFAULT 'prompt' CHECK (kind IN ('prompt', 'heartbeat'));

-- How a message is answered: 'group' (with the chat's history) or 'isolated' (minimal context,
-- no history, no chat memory); null = group. Scheduled firings carry their task's mode.
ALTER TABLE inbox ADD COLUMN context_mode text CHECK (context_mode IN ('group', 'isolated'));

-- A turn's commit finishes the task run of its message, found by inbox id.
CREATE INDEX task_runs_inbox ON task_runs (inbox_id) WHERE inbox_id IS NOT NULL;
