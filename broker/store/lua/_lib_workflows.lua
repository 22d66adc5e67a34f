-- OJS level-3 workflows (chain, group, batch). A workflow lives in the
-- slot of its jobs' queue (ojs:{q}:workflow:<id>; all steps/jobs of a workflow share
-- one queue), so the transition that ends a job (ack, fail's discard and dead
-- letter, cancel, discard_waiting) advances its workflow in the same script: the next chain step is
-- stored there, counters and the workflow state are written there. Batch callbacks
-- may name other queues (other slots): the script marks them due and lists the
-- workflow in the queue's dispatch set; the broker then pushes them under the ids
-- fixed at creation (idempotent) and the maintenance loop re-drives any it missed.

-- The workflow keys of a transition script, declared in its KEYS (passed in) from `first` on:
-- workflow prefix, job prefix, ready prefix, seq, delayed, classes, classes version,
-- escalations, reservation waits, workflow dispatch set, class heads (+ the script's events key).
local function workflow_keys(KEYS, first, events)
  return {prefix = KEYS[first], job_prefix = KEYS[first + 1], ready_prefix = KEYS[first + 2], seq = KEYS[first + 3],
          delayed = KEYS[first + 4], classes = KEYS[first + 5], classes_ver = KEYS[first + 6],
          escalations = KEYS[first + 7], reservation_waits = KEYS[first + 8], dispatch = KEYS[first + 9],
          heads = KEYS[first + 10], events = events}
end

-- Stores a job prepared at creation (p: its decoded payload, WorkflowStore::payload:
-- id, queue, class, class_json, rank_base, scheduled_at, escalate_after,
-- reservation_timeout, fields) as PUSH would; its id is in the directories already.
-- k: store_new_job's keys without the directories.
local function store_prepared_job(k, p, extra_fields, now)
  for _, v in ipairs(extra_fields) do p.fields[#p.fields + 1] = v end
  store_new_job(k, {id = p.id, queue = p.queue, class = p.class, class_json = p.class_json, rank_base = p.rank_base,
                    scheduled_at = p.scheduled_at or '', escalate_after = p.escalate_after or '',
                    reservation_timeout = p.reservation_timeout or '', fields = p.fields}, now)
end

-- The next chain step, with `parent_results` (JSON text); keys from the declared prefixes.
local function workflow_push_member(w, payload, parent_results, now)
  local p = cjson.decode(payload)
  local k = {job = w.job_prefix .. p.id, ready = w.ready_prefix .. p.class, delayed = w.delayed, seq = w.seq,
             events = w.events, classes = w.classes, classes_ver = w.classes_ver, escalations = w.escalations,
             reservation_waits = w.reservation_waits, heads = w.heads}
  store_prepared_job(k, p, {'parent_results', parent_results}, now)
end

-- The results of jobs first..last of a workflow as a JSON array (`known` is job i's,
-- not written yet); null for a job that ended without one.
local function workflow_results(wk, first, last, i, known)
  local names = {}
  for j = first, last do names[#names + 1] = 'r:' .. j end
  local stored = #names > 0 and redis.call('HMGET', wk, unpack(names)) or {}
  local out = {}
  for j = first, last do out[#out + 1] = (j == i) and known or (stored[j - first + 1] or 'null') end
  return '[' .. table.concat(out, ',') .. ']'
end

-- A chain step's parent_results: the result of step i (the one just completed) at
-- index i, earlier indexes null. Only the immediate parent's result (what
-- ojs-workflows.md 7.2 requires), so a chain stores each result once or twice,
-- never every earlier one in every later step (quadratic). The earlier results
-- stay readable in GET /ojs/v1/workflows/{id} (steps[i].result).
local function chain_parent_results(i, result)
  return '[' .. string.rep('null,', i) .. result .. ']'
end

-- A job of a workflow reached a terminal state (outcome: completed | failed |
-- cancelled): count it once, then advance the workflow. No-op for other jobs.
-- Reads only the fields it needs (HMGET), never the whole workflow hash.
local function workflow_job_ended(w, job, outcome, now)
  if not job.workflow_id or not job.workflow_member then return end
  local wk = w.prefix .. job.workflow_id
  local i = tonumber(job.workflow_member)
  local f = redis.call('HMGET', wk, 'state', 'type', 'total', 'completed', 'failed', 'o:' .. i)
  if f[1] ~= 'running' then return end
  if f[6] then return end  -- counted already (a dead-lettered job retried later counts once)
  local wf_type, total = f[2], tonumber(f[3])
  local completed, failed = tonumber(f[4] or '0'), tonumber(f[5] or '0')
  local result = 'null'
  if outcome == 'completed' then
    completed = completed + 1
    if job.result and job.result ~= '' then result = job.result end
  else
    failed = failed + 1
  end
  local upd = {'o:' .. i, outcome, 'r:' .. i, result, 'completed', completed, 'failed', failed}
  local final = nil
  if wf_type == 'chain' then
    if outcome ~= 'completed' then
      final = outcome == 'cancelled' and 'cancelled' or 'failed'
      upd[#upd + 1] = 'failed_step_index'; upd[#upd + 1] = i
    elseif i + 1 < total then
      local next_field = 'p:' .. (i + 1)
      workflow_push_member(w, redis.call('HGET', wk, next_field), chain_parent_results(i, result), now)
      redis.call('HDEL', wk, next_field)  -- stored now: the job hash holds it
    else
      final = 'completed'
    end
  elseif completed + failed >= total then
    final = failed > 0 and 'failed' or 'completed'
    if wf_type == 'batch' then
      local kinds = {'on_complete', 'on_success', 'on_failure'}
      local defined = redis.call('HMGET', wk, 'cbid:on_complete', 'cbid:on_success', 'cbid:on_failure')
      local due = false
      for k, kind in ipairs(kinds) do
        local fires = kind == 'on_complete' or (kind == 'on_success' and failed == 0) or (kind == 'on_failure' and failed > 0)
        if fires and defined[k] then
          upd[#upd + 1] = 'cbs:' .. kind; upd[#upd + 1] = 'due'
          due = true
        end
      end
      if due then
        upd[#upd + 1] = 'cb_parent_results'; upd[#upd + 1] = workflow_results(wk, 0, total - 1, i, result)
        redis.call('ZADD', w.dispatch, now, job.workflow_id)
      end
    end
  end
  if final then
    upd[#upd + 1] = 'state'; upd[#upd + 1] = final
    upd[#upd + 1] = 'completed_at'; upd[#upd + 1] = now
  end
  redis.call('HSET', wk, unpack(upd))
  local about = {'workflow_id', job.workflow_id, 'workflow_type', wf_type}
  emit(w.events, outcome == 'completed' and 'workflow.job_completed' or 'workflow.job_failed', job, about)
  if final then emit(w.events, 'workflow.' .. final, job, about) end
end
