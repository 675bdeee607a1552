#!/usr/bin/env python3
"""The class half of tools/series.sh rebase-check: what each patch would meet in another Netty release, from the class
jars alone (no sources of that release needed).

    rebase-classes.py TREE OLD NEW JARS PATCH...

TREE is a work tree made by `tools/series.sh materialise` on OLD (upstream-base, then one commit per PATCH, in order);
JARS holds netty-<module>-<release>.jar of OLD and NEW. Each patch's hunks, read against the Java structure of the
file before and after it (from TREE), name the classes and methods it touches; `javap -c -p` of each class in both
releases, constant-pool indices and synthetic numbering ($1, lambda$m$0, access$000) stripped, says whether that
class is unchanged, changed outside the patched methods, or changed in one of them (a lambda counts as its method;
a class or member an earlier patch adds counts as changed where NEW has one).
Prints one markdown row per patch.

    rebase-classes.py changes OLD_JAR NEW_JAR

Every class of the two jars that differs, the same way: its members added (+), removed (-) or changed, and the string
constants it gained or lost (error messages tell what a change is for).
"""
import os
import re
import subprocess
import sys
import zipfile

TYPE = re.compile(r'\b(class|interface|enum|record)\s+([A-Za-z_$][\w$]*)')
ANNOTATION = re.compile(r'@[\w.]+(\s*\([^()]*\))?')


def blank(text):
    """The text with comments and literals blanked (newlines kept), so that braces and semicolons are code."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c, d = text[i], text[i + 1] if i + 1 < n else ''
        if c == '/' and d in '/*':
            end = text.find('\n', i) if d == '/' else text.find('*/', i + 2) + 2
            end = n if end < 2 or end == -1 else end
        elif c in '"\'':
            end = i + 1
            while end < n and text[end] != c:
                end += 2 if text[end] == '\\' else 1
            end += 1
        else:
            i += 1
            continue
        for j in range(i, min(end, n)):
            if out[j] != '\n':
                out[j] = ' '
        i = end
    return ''.join(out)


def structure(text):
    """(types, members): types as (binary name, first line, last line); members as (binary class, name, first line,
    last line), a member's lines running from its leading comment or annotation to its closing brace or semicolon.
    Methods are named as javap names them (a constructor by its class's simple name, a static block <clinit>)."""
    code = blank(text)
    pkg = re.search(r'^\s*package\s+([\w.]+)\s*;', code, re.M)
    pkg = pkg.group(1) + '.' if pkg else ''
    types, members, stack = [], [], []  # stack frames: [kind, name or member, first line, depth]
    header, start, line = [], None, 1
    for i, c in enumerate(code):
        if c == '\n':
            line += 1
            continue
        top = stack[-1] if stack else None
        if top is None or top[0] == 'type':
            if start is None and not text[i].isspace():
                start = line
            h = ''.join(header)
            if c == '{':
                t = TYPE.search(h)
                if t:
                    name = (top[1] + '$' if top else pkg) + t.group(2)
                    stack.append(['type', name, start, 0])
                else:
                    stack.append(['body', member(top[1], h), start, 1])
                header, start = [], None
            elif c == ';':
                if top and h.strip():
                    members.append((top[1], member(top[1], h)[1], start, line))
                header, start = [], None
            elif c == '}' and top:
                stack.pop()
                types.append((top[1], top[2], line))
                header, start = [], None
            else:
                header.append(c)
        elif c == '{':
            top[3] += 1
        elif c == '}':
            top[3] -= 1
            if top[3] == 0:
                stack.pop()
                kind, name = top[1][:2]
                if kind == 'field':  # a brace in its initializer: it ends with its semicolon
                    header, start = list(top[1][2]), top[2]
                else:
                    members.append((stack[-1][1], name, top[2], line))
                    header, start = [], None
    return types, members


def signature(name, params, named):
    """name(T1,T2) with each parameter's simple type name (no package, outer class or type arguments), as the source
    (named parameters) and javap (types only) both give it."""
    while '<' in params:
        params = re.sub(r'<[^<>]*>', '', params)
    types = []
    for p in filter(None, (x.strip() for x in params.split(','))):
        p = re.sub(r'\bfinal\s+', '', p)
        t = p.rsplit(None, 1)[0] if named else p
        t = t.replace(' ', '').replace('...', '[]')
        dims = t[t.find('['):] if '[' in t else ''
        types.append(re.split(r'[.$]', t[:len(t) - len(dims)])[-1] + dims)
    return '%s(%s)' % (name, ','.join(types))


def member(cls, header):
    """(kind, name[, header]) of a class member from its code before '{' or ';'; a method's name is its signature."""
    h = ANNOTATION.sub(' ', header).strip()
    paren, eq = h.find('('), h.find('=')
    if paren >= 0 and (eq < 0 or paren < eq):
        name = re.findall(r'[\w$]+', h[:paren])[-1]
        return 'method', signature(name, h[paren + 1:h.find(')', paren)], True)
    if eq < 0 and h in ('static', ''):
        return 'init', '<clinit>' if h == 'static' else '<init>'
    names = re.findall(r'[\w$]+', h[:eq] if eq >= 0 else h)
    return 'field', names[-1] if names else '?', header


def innermost(spans, a, b):
    """The smallest span (name, first, last, ...) holding lines a..b, or None."""
    best = None
    for s in spans:
        if s[-2] <= a and b <= s[-1] and (best is None or s[-1] - s[-2] < best[-1] - best[-2]):
            best = s
    return best


def file_diffs(patch):
    """Per file of a patch: (path, 'new' | 'deleted' | 'modified', [(old line a, old line b, text, is removal)])."""
    files, cur, old = [], None, 0
    with open(patch, encoding='utf-8', errors='replace') as f:
        for raw in f:
            ln = raw.rstrip('\n')
            m = re.match(r'^diff --git a/(\S+) b/(\S+)$', ln)
            if m:
                cur = [m.group(2), 'modified', []]
                files.append(cur)
                continue
            if cur is None:
                continue
            if ln.startswith('new file mode'):
                cur[1] = 'new'
            elif ln.startswith('deleted file mode'):
                cur[1] = 'deleted'
            elif ln.startswith('@@'):
                old = int(re.match(r'^@@ -(\d+)', ln).group(1))
            elif ln.startswith('--- ') or ln.startswith('+++ ') or ln == '-- ':
                continue
            elif ln.startswith('-'):
                cur[2].append((old, old, ln[1:], True))
                old += 1
            elif ln.startswith('+'):
                cur[2].append((old - 1, old, ln[1:], False))  # inserted between old lines old-1 and old
            elif ln.startswith(' '):
                old += 1
    return files


def git_show(tree, rev, path):
    r = subprocess.run(['git', '-C', tree, 'show', '%s:%s' % (rev, path)], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def touched(tree, commit, patch):
    """{module: {class: {'methods': {name: comment only?}, 'added': set(), 'new': bool}}} for one patch."""
    out = {}
    for path, kind, changes in file_diffs(patch):
        if not path.endswith('.java') or '/src/main/java/' not in path:
            continue
        module = path.split('/')[0]
        classes = out.setdefault(module, {})
        after = structure(git_show(tree, commit, path) or '') if kind != 'deleted' else ([], [])
        if kind == 'new':
            for t in after[0]:
                classes[t[0]] = {'methods': {}, 'added': set(), 'new': True}
            continue
        types, members = structure(git_show(tree, commit + '^', path))
        for a, b, text, removed in changes:
            m = innermost(members, a, a) if removed else innermost(members, a, b)
            cls = m[0] if m else (innermost(types, a, b) or max(types, key=lambda t: t[2] - t[1]))[0]
            entry = classes.setdefault(cls, {'methods': {}, 'added': set(), 'new': False})
            if m:
                comment = re.match(r'\s*(\*|/\*|//|$)', text) is not None  # blank or a comment
                entry['methods'][m[1]] = entry['methods'].get(m[1], True) and comment
        before = {(m[0], m[1]) for m in members}
        for cls, name, _, _ in after[1]:
            if (cls, name) not in before and cls in classes:
                classes[cls]['added'].add(name)
    return out


def javap(jar, classes):
    """{class: (declaration, {member name: sorted (signature, normalised block)})} for the classes the jar has; a
    field's signature is its name, a lambda is listed under its method's name with none."""
    with zipfile.ZipFile(jar) as z:
        have = [c for c in sorted(classes) if c.replace('.', '/') + '.class' in z.namelist()]
    if not have:
        return {}
    r = subprocess.run(['javap', '-c', '-p', '-cp', jar] + have, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('rebase-check: javap failed on %s: %s' % (jar, r.stderr.strip()))
    parts = re.split(r'^Compiled from .*\n', r.stdout, flags=re.M)[1:]
    if len(parts) != len(have):
        sys.exit('rebase-check: javap printed %d classes of %s, asked for %d' % (len(parts), jar, len(have)))
    return {c: parse_javap(p, c.rsplit('$', 1)[-1].rsplit('.', 1)[-1]) for c, p in zip(have, parts)}


def normalise(line):
    line = re.sub(r'#\d+(:#\d+)?(,\s*\d+)?', '#', line)
    line = re.sub(r'\$\d+\b', '$N', line)
    return re.sub(r'\s+', ' ', line).strip()


def parse_javap(text, simple_name):
    decl, _, body = text.rstrip().partition('\n')
    body = body[:-1] if body.endswith('}') else body  # the class's closing brace
    head, methods = normalise(decl), {}
    for block in re.split(r'\n\s*\n', body):
        lines = [normalise(x) for x in block.split('\n') if x.strip()]
        if not lines:
            continue
        decl = lines[0]
        if '(' not in decl and decl != 'static {};':  # a field
            name = decl.rstrip(';').split()[-1]
            methods.setdefault(name, []).append((name, decl))
            continue
        name = '<clinit>' if decl == 'static {};' else decl[:decl.index('(')].split()[-1]
        if '.' in name:  # a constructor: javap names it by its class
            name = name.split('.')[-1].split('$')[-1]
        sig = signature(name, decl[decl.index('(') + 1:decl.rindex(')')], False) if '(' in decl else name
        lam = re.match(r'lambda\$(.+)\$N$', name)
        if lam:  # a lambda is part of its method
            name, sig = {'static': '<clinit>', 'new': simple_name}.get(lam.group(1), lam.group(1)), None
        methods.setdefault(name, []).append((sig or '', '\n'.join(lines)))
    for k in methods:
        methods[k].sort()
    return head, methods


def code(methods, sig):
    """The blocks of the method with this signature and the lambdas of its name; all of that name if none has it."""
    blocks = methods.get(sig.split('(')[0], [])
    own = [b for s, b in blocks if s == sig]
    return own + [b for s, b in blocks if not s] if own else [b for s, b in blocks]


def short(cls):
    return cls.rsplit('.', 1)[-1]


def shown(sig, methods):
    """A method's name, with its parameters when it has overloads."""
    name = sig.split('(')[0]
    return sig if len({s for s, _ in methods.get(name, []) if s}) > 1 else name


def main(tree, old, new, jars, patches):
    commits = subprocess.run(['git', '-C', tree, 'rev-list', '--reverse', 'upstream-base..HEAD'],
                             capture_output=True, text=True, check=True).stdout.split()
    if len(commits) != len(patches):
        sys.exit('rebase-check: %s has %d commits after upstream-base, %d patches' % (tree, len(commits), len(patches)))
    print('| patch | verdict on %s | classes unchanged | changed outside the patched methods '
          '| changed in a patched method |' % new)
    print('|---|---|---|---|---|')
    for commit, patch in zip(commits, patches):
        same, outside, inside = [], [], []
        for module, classes in sorted(touched(tree, commit, patch).items()):
            jar = {v: os.path.join(jars, 'netty-%s-%s.jar' % (module, v)) for v in (old, new)}
            a, b = javap(jar[old], classes), javap(jar[new], classes)
            for cls, info in sorted(classes.items()):
                name = short(cls)
                if info['new']:
                    (inside if cls in b else same).append(
                        name + (' (the patch adds it; %s has one)' % new if cls in b else ' (new)'))
                    continue
                if cls not in a:  # added by an earlier patch of the series: it conflicts where NEW has one
                    if cls in b:
                        inside.append('%s (an earlier patch adds it; %s has one)' % (name, new))
                    continue
                if cls not in b:
                    inside.append('%s (not in %s)' % (name, new))
                    continue
                (head_a, ma), (head_b, mb) = a[cls], b[cls]
                hit = ['%s.%s%s' % (name, shown(m, ma), ' (not in %s)' % new if not code(mb, m)
                                    else ' (its comments only)' if doc else '')
                       for m, doc in sorted(info['methods'].items()) if code(ma, m) and code(ma, m) != code(mb, m)]
                hit += ['%s.%s (%s adds it; %s has one)' % (name, m, 'the patch' if m in info['added']
                                                             else 'an earlier patch', new)
                        for m in sorted(info['added'] | set(info['methods'])) if code(mb, m) and not code(ma, m)]
                changed = sorted(m for m in set(ma) | set(mb) if ma.get(m) != mb.get(m))
                if hit:
                    inside.append('; '.join(hit))
                elif changed or head_a != head_b:
                    outside.append('%s (%s)' % (name, ', '.join((['its declaration'] if head_a != head_b else [])
                                                                 + changed)))
                else:
                    same.append(name)
        verdict = 'conflicts' if inside else 'passes'
        print('| %s | %s | %s | %s | %s |' % (os.path.basename(patch), verdict, ', '.join(same) or '-',
                                               '; '.join(outside) or '-', '; '.join(inside) or '-'))


def changes(old_jar, new_jar):
    def classes(jar):
        with zipfile.ZipFile(jar) as z:
            return {n[:-6].replace('/', '.') for n in z.namelist() if n.endswith('.class') and '-' not in n}
    a, b = javap(old_jar, classes(old_jar)), javap(new_jar, classes(new_jar))
    for cls in sorted(set(a) | set(b)):
        if cls not in a or cls not in b:
            print('%s%s' % ('+' if cls in b else '-', cls))
            continue
        (head_a, ma), (head_b, mb) = a[cls], b[cls]
        if (head_a, ma) == (head_b, mb):
            continue
        members = [('+' if m not in ma else '-' if m not in mb else '') + m
                   for m in sorted(set(ma) | set(mb)) if ma.get(m) != mb.get(m)]
        strings = [set(re.findall(r'// String (.*)', '\n'.join(b for v in x.values() for _, b in v))) for x in (ma, mb)]
        print('%s: %s%s' % (cls, ', '.join((['its declaration'] if head_a != head_b else []) + members),
                            ''.join('; %s"%s"' % (sign, t) for sign, diff in (('-', strings[0] - strings[1]),
                                                                               ('+', strings[1] - strings[0]))
                                    for t in sorted(diff))))


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == 'changes':
        changes(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 6:
        main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        sys.exit(__doc__)
