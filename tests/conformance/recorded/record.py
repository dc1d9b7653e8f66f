#!/usr/bin/env python3
"""Fills in replies for a corpus skeleton from a real Redis 7.0: the master on PORT and, for
master-replica cases, a replica server on PORT+1.

    python3 record.py 7399 FILE > NEW

FILE is a skeleton ('# case:', '# topology:', comments, '@T [NODE:] [[CONN]] CMD ARGS',
optionally ending in ' ~' to mark a timing-dependent integer, written ~N with N rounded to
50 ms, or in ' -> (blocked)' for a command that blocks; '@T [NODE:] [[CONN]] <-' for the
reply of a blocked command) or an already recorded file (its replies are dropped; a '~'
reply marks the step again). A named connection ([b]) is a client connection of its own,
opened at its first command of a case (again if the server closed it) and closed when the
case ends. A blocked command's reply must not come before its '<-' line: before each later
command the recorder checks, and stops with an error if it did; at the '<-' line it reads it
(by @T, with 20 ms for the wire). Absolute times in replies (PEXPIRETIME...) come out as
numbers: write them back as placeholders by hand.
Used to make the files of this directory (see README.md); not part of the build."""
import socket, sys, time, re

def sds_split(s):
    # close enough to sdssplitargs for the skeletons (bare words and "..." with \\ and \")
    out, i, n = [], 0, len(s)
    while i < n:
        while i < n and s[i] == ' ': i += 1
        if i >= n: break
        if s[i] == '"':
            i += 1; buf = bytearray()
            while s[i] != '"':
                if s[i] == '\\':
                    i += 1; c = s[i]
                    if c == 'x':
                        buf.append(int(s[i+1:i+3], 16)); i += 3; continue
                    buf += {'n': b'\n', 'r': b'\r', 't': b'\t', '"': b'"', '\\': b'\\'}.get(c, c.encode())
                else:
                    buf += s[i].encode()
                i += 1
            i += 1; out.append(bytes(buf))
        else:
            j = i
            while j < n and s[j] != ' ': j += 1
            out.append(s[i:j].encode()); i = j
    return out

class R:
    def __init__(self, port):
        self.port = port; self.connect()
    def connect(self):
        self.s = socket.create_connection(('127.0.0.1', self.port)); self.buf = b''
    def close(self):
        self.s.close()
    def send(self, argv):
        msg = b'*%d\r\n' % len(argv) + b''.join(b'$%d\r\n%s\r\n' % (len(a), a) for a in argv)
        self.s.sendall(msg)
    def cmd(self, argv):
        self.send(argv); return self.read()
    def fill(self):
        d = self.s.recv(65536)
        if not d: raise EOFError('the server closed the connection')
        self.buf += d
    def line(self):
        while b'\r\n' not in self.buf: self.fill()
        i = self.buf.index(b'\r\n'); l, self.buf = self.buf[:i], self.buf[i + 2:]; return l
    def bytes(self, n):
        while len(self.buf) < n: self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]; return d
    def ready(self, wait):
        """Has a reply (or the end of the connection) come within `wait` seconds?"""
        if self.buf: return True
        self.s.settimeout(max(wait, 0.0001))
        try: self.fill(); return True
        except (socket.timeout, TimeoutError): return False
        except EOFError: return True
        finally: self.s.settimeout(None)
    def read(self):
        line = self.line(); t, rest = line[:1], line[1:]
        if t == b'+': return ('status', rest.decode())
        if t == b'-': return ('error', rest.decode())
        if t == b':': return ('int', int(rest))
        if t == b'$':
            n = int(rest)
            if n < 0: return ('nil',)
            d = self.bytes(n + 2)[:-2]; return ('bulk', d)
        if t == b'*':
            n = int(rest)
            if n < 0: return ('nil',)
            return ('array', [self.read() for _ in range(n)])
        raise ValueError(line)

def esc(b):
    out = '"'
    for c in b:
        ch = chr(c)
        if ch in '"\\': out += '\\' + ch
        elif ch == '\n': out += '\\n'
        elif ch == '\r': out += '\\r'
        elif ch == '\t': out += '\\t'
        elif 32 <= c < 127: out += ch
        else: out += '\\x%02x' % c
    return out + '"'

def render(r, approx=False):
    k = r[0]
    if k == 'status': return r[1]
    if k == 'error': return '(error) ' + r[1]
    if k == 'int':
        if approx: return '~%d' % (50 * round(r[1] / 50))
        return '(integer) %d' % r[1]
    if k == 'nil': return '(nil)'
    if k == 'bulk': return esc(r[1])
    if k == 'array': return '[' + ', '.join(render(x) for x in r[1]) + ']'

# The INFO sections the model answers (redis::node::info): a recorded INFO reply keeps these
# whole, written (info) "...", and drops the others.
INFO_SECTIONS = ('Server', 'Replication', 'Keyspace')

def render_for(argv, r, approx=False):
    # What a server assigns from its own history is written as any integer: a connection's
    # id (CLIENT ID, HELLO's 'id'); INFO's text as (info), its modelled sections only.
    name = [a.lower() for a in argv[:2]]
    if name == [b'client', b'id'] and r[0] == 'int': return '(integer) *'
    if name[:1] == [b'hello'] and r[0] == 'array' and len(r[1]) > 7 and r[1][6] == ('bulk', b'id'):
        return '[' + ', '.join('(integer) *' if i == 7 else render(x) for i, x in enumerate(r[1])) + ']'
    if name[:1] == [b'info'] and r[0] == 'bulk':
        parts = r[1].split(b'\r\n\r\n')
        keep = [p for p in parts if p.split(b'\r\n', 1)[0][2:].decode() in INFO_SECTIONS]
        text = b'\r\n'.join(p if p.endswith(b'\r\n') else p + b'\r\n' for p in keep)
        return '(info) ' + esc(text)
    return render(r, approx)

def sync(m, rep):
    for _ in range(300):
        def info(n):
            t = n.cmd([b'INFO', b'replication'])[1].decode()
            return dict(l.split(':', 1) for l in t.split('\r\n') if ':' in l)
        im, ir = info(m), info(rep)
        if ir.get('master_link_status') == 'up' and 'online' in im.get('slave0', '') \
                and im.get('master_repl_offset') == ir.get('master_repl_offset'):
            return
        time.sleep(0.005)
    raise SystemExit('wait-sync timed out')

def main(port, path):
    r = R(port); rep = R(port + 1); nodes = {'master': r, 'replica': rep}
    ports = {'master': port, 'replica': port + 1}
    named = {}    # (node, conn) -> R, for the case
    blocked = {}  # (node, conn) -> the line of its blocked command
    out = []; start = None
    def conn_of(node, conn):
        if conn is None: return nodes[node]
        if (node, conn) not in named: named[(node, conn)] = R(ports[node])
        return named[(node, conn)]
    for raw in open(path).read().split('\n'):
        line = raw.strip()
        if line.startswith('# case:'):
            if blocked: raise SystemExit('a blocked command has no <- line: %s' % list(blocked.values()))
            for c in named.values(): c.close()
            named.clear()
            rep.cmd([b'REPLICAOF', b'NO', b'ONE'])
            while 'slave0' in r.cmd([b'INFO', b'replication'])[1].decode(): time.sleep(0.01)
            for n in (r, rep):
                for c in (['FLUSHALL'], ['SCRIPT', 'FLUSH'], ['FUNCTION', 'FLUSH'], ['SELECT', '0'], ['CONFIG', 'SET', 'replica-read-only', 'yes']): n.cmd([a.encode() for a in c])
            now = time.time(); start = int(now) + 1; time.sleep(start - now)
            out.append(raw); continue
        if not line.startswith('@'):
            out.append(raw); continue
        at, body = line[1:].split(' ', 1)
        if ' -> ' in body:  # a recorded file: drop the reply, keep its '~' mark
            body, old = body.split(' -> ', 1)
            body = body.strip() + (' ~' if old.startswith('~') else '') + (' -> (blocked)' if old.strip() == '(blocked)' else '')
        awaits = ' <- ' in body or body.endswith(' <-') or body == '<-'
        if awaits: body = body.split('<-', 1)[0].strip() + ' <-'
        body = body.strip(); approx = body.endswith(' ~')
        if approx: body = body[:-2]
        blocks = body.endswith(' -> (blocked)')
        if blocks: body = body[:-len(' -> (blocked)')]
        due = start + int(at) / 1000
        if due > time.time(): time.sleep(due - time.time())
        def sub(a):
            m = re.fullmatch(rb'\{unix_(ms|s)([+-]\d+)?\}', a)
            if not m: return a
            off = int(m.group(2) or 0)
            base = start * 1000 if m.group(1) == b'ms' else start
            return str(base + off).encode()
        if body == 'link replica master':
            assert rep.cmd([b'REPLICAOF', b'127.0.0.1', str(port).encode()])[1] == 'OK'
            out.append('@%-5s %s' % (at, body)); continue
        if body == 'wait-sync':
            sync(r, rep); out.append('@%-5s %s' % (at, body)); continue
        node, cmdtext = 'master', body
        if body.startswith('master: ') or body.startswith('replica: '):
            node, cmdtext = body.split(': ', 1)
        conn = None
        m = re.match(r'\[([A-Za-z0-9_-]+)\]( |$)', cmdtext)
        if m: conn, cmdtext = m.group(1), cmdtext[m.end():]
        key = (node, conn)
        # Before a command is sent no blocked command may have answered (between two '<-'
        # lines nothing is sent, and replies due to the same step may come in any order).
        for k, where in ([] if awaits else blocked.items()):
            if conn_of(*k).ready(0): raise SystemExit('line %s: the reply of line %s came before its <- line' % (raw, where))
        if awaits:
            c = conn_of(node, conn)
            if key not in blocked: raise SystemExit('%s: no blocked command on that connection' % raw)
            del blocked[key]
            if not c.ready(0.02): raise SystemExit('%s: no reply by @%s' % (raw, at))
            got = c.read()
            out.append('@%-5s %-40s %s' % (at, body, render(got, approx))); continue
        c = conn_of(node, conn)
        argv = [sub(a) for a in sds_split(cmdtext)]
        try:
            c.send(argv)
        except (BrokenPipeError, ConnectionResetError):
            c.connect(); c.send(argv)
        if blocks:
            blocked[key] = raw
            out.append('@%-5s %-40s -> (blocked)' % (at, body)); continue
        try:
            got = c.read()
        except EOFError:
            c.connect(); got = c.cmd(argv)
        out.append('@%-5s %-40s -> %s' % (at, body, render_for(argv, got, approx)))
    if blocked: raise SystemExit('a blocked command has no <- line: %s' % list(blocked.values()))
    sys.stdout.write('\n'.join(out))

main(int(sys.argv[1]), sys.argv[2])
