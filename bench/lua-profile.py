# Redis work of the job scripts (push, claim, ack) and of a minimal claim, counted in
# instructions: a redis-server run under callgrind, fed the real scripts with the ARGV
# the broker sends. Instruction counts do not move with the machine's load, unlike
# commandstats µs.
#
# FORM=fcall (default): the Redis Function library as broker/store/lua_scripts.cpp builds
# it (helpers once, one function per script; FUNCTION LOAD once, FCALL per call).
# FORM=evalsha: the form before it, each script sent as the _lib*.lua prelude plus the
# script (SCRIPT LOAD, EVALSHA per call), for before/after figures from one tool.
#
#   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg/out.%p redis-server --port 6392 --save '' --appendonly no &
#   CGPID=<its pid> CGDIR=/tmp/cg SHORT=1 python3 bench/lua-profile.py broker/store/lua 6392 300
#
# Phases: push (the script alone), pushrt (the whole PUSH's commands, as the broker sends
# them, per job), claim (with its snapshot reads), snap (those alone), nack (a third of the
# claimed jobs, retried), ack (the rest), settle (per ended attempt), min.
# Env: CLASSES (10), ONLY0=1 (every job in class 0: the others stay empty), HINT=1 (claim
# passes the empty-class hint), SHORT=1 (instruction counts only; without it, commandstats too),
# FAIR=1 (the queue's policy is `fair`, weights team-a 1 and team-b 3, jobs alternate tenants:
# the claim compares the tenants' use, and with a usage journal folds it first).
import socket, sys, os, glob, time, hashlib, json, re
LUA = sys.argv[1]; PORT = int(sys.argv[2]); N = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
CLASSES = int(os.environ.get('CLASSES', '10'))
class R:
    def __init__(s, port):
        s.s = socket.create_connection(('127.0.0.1', port)); s.f = s.s.makefile('rb')
    def enc(s, args):
        out = [b'*%d\r\n' % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b'$%d\r\n%s\r\n' % (len(a), a))
        return b''.join(out)
    def read(s):
        line = s.f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b'+': return rest.decode()
        if t == b'-': return Exception(rest.decode())
        if t == b':': return int(rest)
        if t == b'$':
            n = int(rest)
            if n < 0: return None
            d = s.f.read(n + 2)[:-2]; return d.decode(errors='replace')
        if t == b'*':
            n = int(rest)
            if n < 0: return None
            return [s.read() for _ in range(n)]
        raise RuntimeError(line)
    def __call__(s, *args):
        s.s.sendall(s.enc(args)); r = s.read()
        if isinstance(r, Exception): raise r
        return r
    def pipe(s, cmds):
        s.s.sendall(b''.join(s.enc(c) for c in cmds)); return [s.read() for _ in cmds]
FORM = os.environ.get('FORM', 'fcall')
files = sorted(glob.glob(LUA + '/*.lua'))
src = [(os.path.basename(f)[:-4], open(f, encoding='utf-8').read()) for f in files]
helpers = ''.join(b + '\n' for n, b in src if n.startswith('_'))
scripts = {n: b for n, b in src if not n.startswith('_')}
def library(suffix):  # without LIBRARY: the scripts of LUA_DIR with every helper in one scope
    return '#!lua name=ojs%s\n' % suffix + helpers + ''.join(
        "redis.register_function{function_name = '%s%s', callback = function(KEYS, ARGV)\nbegin_call()\n%s\nend}\n" % (n, suffix, b)
        for n, b in scripts.items())
r = R(PORT)
r('FLUSHALL'); r('FUNCTION', 'FLUSH')
if FORM == 'evalsha':
    sha = {n: r('SCRIPT', 'LOAD', helpers + b) for n, b in scripts.items() if n in ('push', 'claim', 'ack')}
    call = lambda n, keys, args: ['EVALSHA', sha[n], len(keys)] + keys + args
elif os.environ.get('LIBRARY'):  # the text the broker loads (broker --print-lua-library): per-script includes
    text = open(os.environ['LIBRARY']).read()
    suffix = '_' + re.match(r'#!lua name=ojs_(\w+)', text).group(1)
    r('FUNCTION', 'LOAD', text)
else:  # LUA_DIR of another tree: every helper in one scope, as before per-script includes (same work per call)
    suffix = '_' + hashlib.sha1(library('').encode()).hexdigest()[:12]
    r('FUNCTION', 'LOAD', library(suffix))
if FORM != 'evalsha':
    call = lambda n, keys, args: ['FCALL', n + suffix, len(keys)] + keys + args
q = 'k10'; P = 'ojs:{%s}:' % q
K = lambda n: P + n
BAND = 2**40
cls = [hashlib.sha1(str(c).encode()).hexdigest()[:16] for c in range(CLASSES)]
def stats():
    info = r('INFO', 'commandstats') + r('INFO', 'cpu')
    out = {}
    for line in info.split('\r\n'):
        if line.startswith('cmdstat_'):
            name, rest = line[8:].split(':', 1)
            d = dict(kv.split('=') for kv in rest.split(','))
            out[name] = (int(d['calls']), int(d['usec']))
        elif line.startswith('used_cpu_user_main_thread') or line.startswith('used_cpu_sys_main_thread'):
            k, v = line.split(':'); out[k] = float(v)
    return out
import subprocess
PID = int(os.environ['CGPID'])
CGDIR = os.environ.get('CGDIR', '/tmp/cg')
def phase(name, cmds, per=None):  # per: the operations the commands make up (default: one each)
    r('CONFIG', 'RESETSTAT'); c0 = stats()
    subprocess.run(['callgrind_control', '-z', str(PID)], capture_output=True)
    t0 = time.time()
    for i in range(0, len(cmds), 1):
        cmd = cmds[i]() if callable(cmds[i]) else cmds[i]  # a callable builds its command from reads of its own (counted)
        res = r.pipe(cmd[1]) if cmd[0] == 'PIPE' else r(*cmd)  # ('PIPE', [cmd, ...]): one round trip
        if name == 'claim' and not CLAIM_READ_BACK and (not isinstance(res, list) or res[0] != 'ok' or not res[1]): print('claim reply', str(res)[:200]); break
    before = set(glob.glob(CGDIR + '/out.*'))
    subprocess.run(['callgrind_control', '-d', name, str(PID)], capture_output=True)
    new = sorted(set(glob.glob(CGDIR + '/out.*')) - before)
    tot = 0
    for f in new:
        out = subprocess.run(['callgrind_annotate', '--inclusive=yes', f], capture_output=True, text=True).stdout
        for l in out.split('\n'):
            if ':processInputBuffer ' in l: tot = int(l.split()[0].replace(',', '')); break
        os.rename(f, CGDIR + '/last-' + name)
    ins = [tot, 0]
    c1 = stats()
    n = per or len(cmds)
    cpu = (c1['used_cpu_user_main_thread'] + c1['used_cpu_sys_main_thread'] - c0['used_cpu_user_main_thread'] - c0['used_cpu_sys_main_thread']) * 1e6 / n
    ev = c1.get('fcall', c1.get('evalsha', (0, 0)))
    nested = {k: v for k, v in c1.items() if k.startswith(('evalsha', 'fcall', 'function', 'config', 'info')) is False and isinstance(v, tuple)}
    nsum = sum(v[1] for v in nested.values())
    print('%-6s %.1fk instructions per call' % (name, ins[0] / n / 1e3))
    if os.environ.get('SHORT'): return
    print('%-6s %s %.1f us/call (nested cmds %.1f us, %.1f calls) | cpu %.1f us/call | %s' % (
        name, FORM.upper(), ev[1] / n, nsum / n, sum(v[0] for v in nested.values()) / n, cpu,
        ' '.join('%s %.1fx %.2fus' % (k, v[0] / n, v[1] / n) for k, v in sorted(nested.items(), key=lambda kv: -kv[1][1]))))
HEADS = True  # the class-head index layout (keys.hpp class_heads)
ids = ['0193%012x-7000-8000-%012x' % (i, i) for i in range(N)]
ONLY0 = os.environ.get('ONLY0')  # every job in class 0: the other classes stay empty
FAIR = os.environ.get('FAIR')  # the config queue_config.lua writes for policy fair (broker/governance/queue_config.cpp)
if FAIR:
    for qq in (q, 'p1'):
        r('HSET', 'ojs:{%s}:config' % qq, 'policy', 'fair', 'fair_tenants',
          json.dumps({'base': 4096, 'slots': 3, 'default_weight': 1, 'tenants': {'team-a': [1, 1], 'team-b': [2, 3]},
                      'order': os.environ.get('FAIR_ORDER', 'tenant')}))  # FAIR_ORDER=class: the class order
# push.lua checks the version of the queue config the broker prepared the job with (KEYS 11, ARGV 8).
CONFIG_CHECK = 'stale_config' in scripts['push']
def push_cmd(i, q=q, ids=ids):
    K = lambda n: 'ojs:{%s}:' % q + n
    c = 0 if ONLY0 else i % CLASSES
    # The document as PushService stores it (JobRecord::stored_document: no id, queue,
    # type, specversion, empty meta or default retry; the broker's key order).
    doc = json.dumps({'args': [i], 'ext_ml_gpu_count': 1, 'ext_ml_gpu_memory_gb': c + 1, 'max_attempts': 3, 'priority': 0},
                     separators=(',', ':'), sort_keys=True)
    rank = BAND * 100
    keys = [K('job:' + ids[i]), K('classes'), K('classes:ver'), K('ready:' + cls[c]), K('delayed'), K('seq'), K('events'), K('escalations'), K('reservation-waits')]
    if HEADS: keys.append(K('heads'))
    args = [ids[i], cls[c], '{"gpu_count":1,"gpu_memory_gb":%d}' % (c + 1), str(rank), '', '', '']
    if CONFIG_CHECK: keys.append(K('config')); args.append('0')
    if 'KEYS[12]' in scripts['push']: keys.append(K('ready:'))  # the ready prefix: the queue's depth
    if 'KEYS[13]' in scripts['push']: keys.append(K('on-hold'))  # held jobs count in the depth
    args += ['doc', doc, 'queue', q, 'type', 'bench.noop']  # the fields PushService::prepare writes
    # the on-demand class's band of the tenant's slot (priority_score.hpp fair_band: 4096 + 1 * 1365 + slot)
    if FAIR: args += ['tenant', 'team-a' if i % 2 == 0 else 'team-b', 'order_base', str((4096 + 1365 + 1 + i % 2) * BAND)]
    return call('push', keys, args)
phase('push', [push_cmd(i) for i in range(N)])
# The whole PUSH as the broker sends it, in another queue: before, the config read, the
# directory pipeline and the script (3 round trips); with the check, the job directory
# entry and the script in one pipeline (the queue's directory entry already written).
q1, ids1 = 'p1', ['0194%012x-7000-8000-%012x' % (i, i) for i in range(N)]
def push_trip(i):
    cfg = ['HMGET', 'ojs:{%s}:config' % q1, 'version', 'updated_at', 'max_total_gpus', 'max_concurrent_gpu_jobs', 'ml_defaults',
           'ml_limits', 'tenant_quotas', 'rate_limit', 'policy', 'tenant_fairness', 'backfill']
    dir_job = ['HSETNX', 'ojs:{_global}:job-queue', ids1[i], q1]
    if CONFIG_CHECK: return [('PIPE', [dir_job, push_cmd(i, q1, ids1)])]
    return [cfg, ('PIPE', [dir_job, ['HSETNX', 'ojs:{_global}:queues', q1, '1']]), push_cmd(i, q1, ids1)]
phase('pushrt', [c for i in range(N) for c in push_trip(i)], per=N)
# The broker decides (scheduling/claim_decision.cpp) and claim.lua commits its picks:
# per claim, the snapshot FETCH reads (the first page of heads, policy, budget) then the commit
# of the best class's head and three spares. `claim` counts both; `snap` the reads alone.
# FAIR: the snapshot, fair_candidates.lua (the tenants' candidates and use) and the
# commit of the first candidate listed (this script stands in for the C++ order).
# The first page as FETCH reads it with the worker's contact (FetchService::FirstPage):
# the whole index (up to 16 heads) for a queue of 16 classes or fewer, else 4 heads.
PAGE = 16 if CLASSES <= 16 else 4
SNAP = [['ZRANGE', K('heads'), '0', str(PAGE - 1), 'WITHSCORES'], ['HMGET', K('config'), 'policy', 'tenant_quotas'],
        ['HMGET', K('config'), 'max_total_gpus', 'max_concurrent_gpu_jobs', 'max_total_gpu_memory_mb', 'max_total_tpu_chips'],
        ['HMGET', K('ledger'), 'gpus', 'gpu_jobs', 'gpu_mem_mb', 'tpu_chips'],
        ['ZRANGEBYSCORE', K('delayed'), '-inf', '+inf', 'WITHSCORES', 'LIMIT', '0', '1'], ['TIME'], ['GET', K('classes:ver')]]
VER = r('GET', K('classes:ver')) or '0'
COMMIT_KEYS = [K('classes:ver'), K('paused'), K('delayed'), K('active'), K('seq'), K('events'), K('config'), K('ledger'),
               K('tenant-quotas'), K('tenant-ledger'), K('job:'), K('ready:'), K('stats'), K('rate-window'), K('heads'), K('held:w1'),
               K('finished:'), K('usage')]
# The claimed job read back natively behind the commit, when claim.lua no longer returns
# it (ClaimStore::commit): counted with the claim, as the broker sends it.
CLAIM_READ_BACK = 'read_claim_fields' in helpers or (os.environ.get('LIBRARY') and 'read_claim_fields' in open(os.environ['LIBRARY']).read())
def claim_cmd():
    reply = r(*commit_cmd())
    if not isinstance(reply, list) or reply[0] != 'ok' or not reply[1]: raise RuntimeError('claim reply ' + str(reply)[:200])
    return ['HGETALL', K('job:' + reply[1][0])]
PROMOTE_FLAG = 'ARGV[10]' in scripts['claim']  # the broker says whether its snapshot saw a job due
def commit_cmd():
    snap = r.pipe(SNAP)
    heads = snap[0]
    t = snap[5]
    due = bool(snap[4]) and float(snap[4][1]) <= int(t[0]) * 1000 + int(t[1]) // 1000
    if FAIR:
        ids = [heads[i] for i in range(0, len(heads), 2)]
        cands = r(*call('fair_candidates', [K('config'), K('ready:'), K('job:'), K('usage')], ['1'] + ids))
        first = next(c for c in cands[3:] if c[1])
        picks = '\n%s\t%s\t0\t1\t[0]\t0\t0' % (first[0], first[1][2])
    else:
        picks = ''.join('\n%s\t\t0\t1\t[0]\t0\t0' % heads[i] for i in range(0, min(len(heads), 8), 2))
    args = ['w1', '', '30000', '1', VER, str(BAND), '1', picks, '1' if FAIR else '']
    if PROMOTE_FLAG: args.append('1' if due else '0')
    return call('claim', COMMIT_KEYS, args)
phase('claim', [claim_cmd if CLAIM_READ_BACK else commit_cmd] * (N // 2))
phase('snap', [('PIPE', SNAP)] * (N // 2))
if FAIR:  # the candidates read alone (over the heads left)
    heads_now = r.pipe(SNAP)[0]
    ids_now = [heads_now[i] for i in range(0, len(heads_now), 2)]
    phase('fcand', [call('fair_candidates', [K('config'), K('ready:'), K('job:'), K('usage')], ['1'] + ids_now)] * 20)
active = r('ZRANGE', K('active'), 0, -1)
ACK_KEYS = [K('active'), K('stats'), K('events'), K('ledger'), K('tenant-ledger')]
SETTLE = 'settle' in scripts  # an ACK journals its completion; settle.lua counts it (and folds the journal)
if SETTLE:  # keys.hpp: no stats, finished index nor run times in the transition
    ACK_KEYS = [K('active'), K('events'), K('ledger'), K('tenant-ledger'), K('held:'), K('usage-journal'), K('usage')]
elif 'workflow_keys(KEYS, 12' in scripts['ack']:  # the usage journal and hash after the run times (keys.hpp usage_transition_keys)
    ACK_KEYS += [K('held:'), K('finished:'), K('run-times:'), K('usage-journal'), K('usage')]
elif 'workflow_keys(KEYS, 11' in scripts['ack']:  # the workflow keys only for a workflow's job (none here)
    ACK_KEYS += [K('held:'), K('finished:'), K('usage-journal'), K('run-times:')]
elif 'release_holder' in scripts['ack']:  # the held prefix, then the workflow keys the broker declares (keys.hpp)
    ACK_KEYS += [K('held:'), K('workflow:'), K('job:'), K('ready:'), K('seq'), K('delayed'), K('classes'), K('classes:ver'),
                 K('escalations'), K('reservation-waits'), K('workflow-dispatch'), K('heads')]
JOURNAL = 'usage_fold' in scripts  # the ends go to a journal, folded later (usage_fold.lua)
if 'workflow_keys(KEYS, 11' not in scripts['ack'] and 'workflow_keys(KEYS, 12' not in scripts['ack']:
    if 'job_finished' in scripts['ack']: ACK_KEYS.append(K('finished:'))  # the finished prefix (keys.hpp)
    if JOURNAL: ACK_KEYS.append(K('usage-journal'))  # keys.hpp usage_transition_keys
    elif 'usage_keys' in scripts['ack']: ACK_KEYS += [K('usage'), K('usage-totals'), K('usage-hours'), K('config')]
    if 'note_run_time' in scripts['ack']: ACK_KEYS.append(K('run-times:'))  # keys.hpp run_times_prefix
# The job read back behind the script, in the same round trip, when ack.lua no longer
# returns it (JobStore::ack): counted with the ACK, as the broker sends it.
READ_BACK = 'JobStore::ack reads it back' in scripts['ack']
def ack_cmd(a):
    c = call('ack', [K('job:' + a)] + ACK_KEYS, ['', 'w1'])
    return ('PIPE', [c, ['HGETALL', K('job:' + a)]]) if READ_BACK else c
# NACK (fail.lua, outcome retry) of the first third of the claimed jobs, the rest ACKed.
# The lean layout (its workflow keys only for a workflow's job, the job read back natively
# behind the call) when fail.lua answers need_keys; else the 26 keys it always took.
LEAN_FAIL = 'need_keys' in scripts['fail']
def nack_cmd(a):
    if LEAN_FAIL:
        keys = [K('job:' + a), K('active'), K('delayed'), K('dead'), K('stats'), K('events'), K('ledger'), K('tenant-ledger'),
                K('preempting'), K('ready:' + cls[0]), K('seq'), K('held:'), K('heads'), K('usage-journal'), K('usage')]
        c = call('fail', keys, ['1', 'retry', '9999999999999', '{"code":"boom","message":"boom"}', '', '0', 'w1'])
        return ('PIPE', [c, ['HGETALL', K('job:' + a)]])
    keys = [K('job:' + a), K('active'), K('delayed'), K('dead'), K('stats'), K('events'), K('ledger'), K('tenant-ledger'),
            K('preempting'), K('ready:' + cls[0]), K('seq'), K('held:'), K('workflow:'), K('job:'), K('ready:'), K('seq'),
            K('delayed'), K('classes'), K('classes:ver'), K('escalations'), K('reservation-waits'), K('workflow-dispatch'),
            K('heads'), K('finished:'), K('usage-journal'), K('usage')]
    return call('fail', keys, ['1', 'retry', '9999999999999', '{"code":"boom","message":"boom"}', '', '0', 'w1'])
nacked, active = active[:len(active) // 3], active[len(active) // 3:]
phase('nack', [nack_cmd(a) for a in nacked])
phase('ack', [ack_cmd(a) for a in active])
if SETTLE:  # the maintenance pass's settling of those ACKs' lines, per ACK (ACK's cost is ack + settle)
    SETTLE_KEYS = [K('usage-journal'), K('stats'), K('finished:'), K('run-times:'), K('usage'), K('usage-totals'),
                   K('usage-hours'), K('config')]
    if 'KEYS[9]' in scripts['settle']: SETTLE_KEYS.append(K('job:'))  # the job prefix (a discard's index entry)
    phase('settle', [call('settle', SETTLE_KEYS, ['1000'])], per=max(len(active) + len(nacked), 1))  # per ended attempt
elif JOURNAL:  # the maintenance pass's fold of those ACKs' lines, per line (ACK's cost is ack + fold)
    FOLD_KEYS = [K('usage-journal'), K('usage'), K('usage-totals'), K('usage-hours'), K('config')]
    if FAIR:  # fold1: one line a call, as a fair claim that folded first paid it (a job a claim)
        phase('fold1', [call('usage_fold', FOLD_KEYS, ['1'])] * 20)
    lines = r('LLEN', K('usage-journal'))
    phase('fold', [call('usage_fold', FOLD_KEYS, ['1000'])], per=max(lines, 1))
# CANCEL (cancel.lua) of PUSH's round-trip jobs, waiting in queue p1: what a bulk cancel
# sends per job. The lean layout (the workflow keys only for a workflow's job, the job
# read back natively behind the call) when cancel.lua answers need_keys; else the 23
# keys it always took and the job in its reply.
K1 = lambda n: 'ojs:{%s}:' % q1 + n
WF1 = [K1('workflow:'), K1('job:'), K1('ready:'), K1('seq'), K1('delayed'), K1('classes'), K1('classes:ver'), K1('escalations'),
       K1('reservation-waits'), K1('workflow-dispatch'), K1('heads')]
LEAN_CANCEL = 'need_keys' in scripts['cancel']
def cancel_cmd(i):
    head = [K1('job:' + ids1[i]), K1('ready:'), K1('delayed'), K1('active'), K1('stats'), K1('events'), K1('ledger'),
            K1('tenant-ledger')]
    tail = [K1('finished:'), K1('on-hold'), K1('usage-journal'), K1('usage')]
    if LEAN_CANCEL:
        return ('PIPE', [call('cancel', head + tail + [K1('heads')], ['cancel']), ['HGETALL', K1('job:' + ids1[i])]])
    return call('cancel', head + WF1 + tail, ['cancel'])
phase('cancel', [cancel_cmd(i) for i in range(N)])
# minimal claim for reference, in the same form
r('DEL', 'min:z'); r.pipe([['ZADD', 'min:z', i, 'm%d' % i] for i in range(N)])
MIN = "local m = redis.call('ZPOPMIN', KEYS[1]) if m[1] then redis.call('HSET', KEYS[2] .. m[1], 'state', 'active', 'worker_id', ARGV[1], 'started_at', ARGV[2]) end return m[1]"
if FORM == 'evalsha':
    min_cmd = ['EVALSHA', r('SCRIPT', 'LOAD', MIN), 2, 'min:z', 'min:h:', 'w1', '123']
else:
    r('FUNCTION', 'LOAD', '#!lua name=min\nredis.register_function{function_name = "min", callback = function(KEYS, ARGV) %s end}' % MIN)
    min_cmd = ['FCALL', 'min', 2, 'min:z', 'min:h:', 'w1', '123']
phase('min', [min_cmd] * (N // 2))
# OPCOST=1: what the pieces of a script call cost Redis, each measured alone (docs/benchmarks.md
# "What a script call costs Redis"): the FCALL itself per key and argument, one small command
# from Lua against the same natively, and a job-sized hash read natively, into Lua, and
# returned through Lua.
if os.environ.get('OPCOST'):
    fns = {'op_none': 'return 1', 'op_hincrby': "redis.call('HINCRBY', KEYS[1], 'n', '1') return 1",
           'op_hincrby5': "for i = 1, 5 do redis.call('HINCRBY', KEYS[1], 'n', '1') end return 1",
           'op_read': "local f = redis.call('HGETALL', KEYS[1]) return 1", 'op_return': "return redis.call('HGETALL', KEYS[1])"}
    r('FUNCTION', 'LOAD', '#!lua name=opcost\n' + ''.join(
        'redis.register_function{function_name = "%s", callback = function(KEYS, ARGV) %s end}\n' % kv for kv in fns.items()))
    job = [x for i in range(19) for x in ('field_%d' % i, ('d' * 400) if i == 0 else 'value-%d' % i)]  # a claimed job: 19 fields
    r('HSET', 'op:job', *job)
    keys32 = ['ojs:{k10}:key-%d' % i for i in range(32)]
    M = 300
    phase('FCALL, no key', [['FCALL', 'op_none', 0]] * M)
    phase('FCALL, 1 key', [['FCALL', 'op_none', 1, 'op:job']] * M)
    phase('FCALL, 32 keys', [['FCALL', 'op_none', 32] + keys32] * M)
    phase('FCALL, 32 keys + 10 args', [['FCALL', 'op_none', 32] + keys32 + ['arg-%d' % i for i in range(10)]] * M)
    phase('HINCRBY, native', [['HINCRBY', 'op:n', 'n', '1']] * M)
    phase('FCALL of 1 HINCRBY', [['FCALL', 'op_hincrby', 1, 'op:n']] * M)
    phase('FCALL of 5 HINCRBY', [['FCALL', 'op_hincrby5', 1, 'op:n']] * M)
    phase('HGETALL job, native', [['HGETALL', 'op:job']] * M)
    phase('FCALL: HGETALL job into Lua', [['FCALL', 'op_read', 1, 'op:job']] * M)
    phase('FCALL: HGETALL job returned', [['FCALL', 'op_return', 1, 'op:job']] * M)
