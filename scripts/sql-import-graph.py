import re, os, sys
# The import graph of crates/sql/src: every crate-internal edge with its lines, then the cycles.
# Used by docs/design/issue20-sql-engine.md; run from anywhere. Modules are files named by
# their path (`types/value.rs` is types::value, `exec/mod.rs` is exec); a path names the
# longest module it starts with, and lib.rs's re-exports of items map to the module defining
# them. A quick regex reading (one-level `{..}` groups, no `use` aliases); the exact graph,
# which the layer rule is checked on, is crates/sql/tests/layers.rs's:
#   cargo test -p zipdb-sql --test layers -- --ignored --nocapture print_import_graph
src=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'crates', 'sql', 'src')
files={}
for d,_,fs in os.walk(src):
    for f in fs:
        if not f.endswith('.rs'): continue
        rel=os.path.relpath(os.path.join(d,f),src)[:-3].split(os.sep)
        if rel[-1] in ('mod','lib'): rel=rel[:-1]
        files['::'.join(rel) or 'lib']=os.path.join(d,f)
mods=sorted(files)
reexp={'SqlError':'error','Interrupt':'runtime::limits','parse':'front::parse','sql_from_bytes':'front::parse',
 'Statement':'front::parse','ColumnMeta':'types::result','Outcome':'types::result','Instance':'session',
 'InstanceOptions':'session','PreparedInfo':'session','Process':'session','Session':'session',
 'Warning':'types::diag','Decimal':'types::value','SqlType':'types::value','Value':'types::value',
 'STATEMENT_STACK_BYTES':'front::stack','STATEMENT_STACK_NEEDED':'front::stack',
 'accounts':'catalog::accounts','codec':'catalog::codec','result':'types::result','value':'types::value'}
def resolve(segs):
    """The module a crate-absolute path (list of segments) names."""
    for k in range(len(segs),0,-1):
        m='::'.join(segs[:k])
        if m in files: return m
    return reexp.get(segs[0]) if segs else None
edges={m:{} for m in mods}  # a->b->set(lines)
for m in mods:
    if m=='lib': continue
    lines=open(files[m]).read().split('\n')
    end=len(lines)  # cut the test module
    for i,l in enumerate(lines):
        if l.startswith('#[cfg(test)]') and i+1<len(lines) and re.match(r'mod \w*tests', lines[i+1]):
            end=i;break
    here=[] if m=='lib' else m.split('::')
    base=here if files[m].endswith('mod.rs') else here[:-1]
    for i,l in enumerate(lines[:end]):
        s=l.strip()
        if s.startswith('//'): continue
        s=re.sub(r'//.*','',s)
        found=[]
        for mm in re.finditer(r'\b(crate|super)((?:::\w+)*)::\{([^}]*)\}',s):
            pre=[x for x in mm.group(2).split('::') if x]
            for it in mm.group(3).split(','):
                it=it.strip().split(' ')[0]
                if it: found.append((mm.group(1),pre+[x for x in it.split('::') if x and x!='self']))
        for mm in re.finditer(r'\b(crate|super)((?:::\w+)+)',s):
            found.append((mm.group(1),[x for x in mm.group(2).split('::') if x]))
        for root,segs in found:
            if root=='super':
                up=base[:]
                while segs and segs[0]=='super': segs=segs[1:]; up=up[:-1]
                segs=up[:-1]+segs
            tgt=resolve(segs)
            if tgt and tgt!=m and tgt!='lib': edges[m].setdefault(tgt,set()).add(i+1)
n=0
for a in mods:
    for b in sorted(edges[a]):
        n+=1
        print(f'{a} -> {b}  (lines {",".join(map(str,sorted(edges[a][b])))})')
print('edges',n, file=sys.stderr)
# strongly connected components (Tarjan)
g={a:set(edges[a]) for a in mods}
idx={};low={};st=[];on=set();sccs=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in g[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        sccs.append(comp)
for v in mods:
    if v not in idx: sc(v)
for s in sccs:
    if len(s)>1: print('SCC',len(s),sorted(s),file=sys.stderr)
