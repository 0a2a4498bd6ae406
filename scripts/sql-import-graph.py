import re, os, collections, sys
# The import graph of crates/sql/src: every crate-internal edge with its lines, then the cycles.
# Used by docs/design/issue20-sql-engine.md; run from anywhere. It reads the flat layout only (the
# files directly in src/, as before issue 20's Phase A). crates/sql/tests/layers.rs computes the
# same graph over the folders and enforces the layers; it prints it with
#   cargo test -p zipdb-sql --test layers -- --ignored --nocapture print_import_graph
src=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'crates', 'sql', 'src')
mods=[f[:-3] for f in sorted(os.listdir(src)) if f.endswith('.rs')]
reexp={'SqlError':'error','Interrupt':'limits','parse':'parse','sql_from_bytes':'parse','Statement':'parse',
 'ColumnMeta':'result','Outcome':'result','Instance':'session','InstanceOptions':'session','PreparedInfo':'session',
 'Process':'session','Session':'session','Warning':'session','Decimal':'value','SqlType':'value','Value':'value',
 'STATEMENT_STACK_BYTES':'lib','STATEMENT_STACK_NEEDED':'lib'}
edges=collections.defaultdict(lambda: collections.defaultdict(set))  # a->b->set(items/lines)
for m in mods:
    lines=open(f'{src}/{m}.rs').read().split('\n')
    # cut test module
    end=len(lines)
    for i,l in enumerate(lines):
        if l.startswith('#[cfg(test)]') and i+1<len(lines) and re.match(r'mod \w*tests', lines[i+1]):
            end=i;break
    for i,l in enumerate(lines[:end]):
        s=l.strip()
        if s.startswith('//'): continue
        s=re.sub(r'//.*','',s)
        for mm in re.finditer(r'crate::\{([^}]*)\}',s):
            for it in mm.group(1).split(','):
                it=it.strip().split('::')[0].split(' ')[0]
                if not it: continue
                tgt = it if it in mods else reexp.get(it)
                if tgt and tgt!=m: edges[m][tgt].add(i+1)
        for mm in re.finditer(r'crate::(\w+)(::(\w+|\{[^}]*\}))?',s):
            it=mm.group(1)
            tgt = it if it in mods else reexp.get(it)
            if tgt and tgt!=m: edges[m][tgt].add(i+1)
        for mm in re.finditer(r'\bsuper::(\w+)',s):
            it=mm.group(1); tgt = it if it in mods else reexp.get(it)
            if tgt and tgt!=m: edges[m][tgt].add(i+1)
    # multi-line use crate::{ ... }
    txt='\n'.join(lines[:end])
    for mm in re.finditer(r'use crate::(\w+)::\{([^}]*)\}',txt):
        pass
n=0
for a in mods:
    for b in sorted(edges[a]):
        n+=1
        print(f'{a} -> {b}  (lines {",".join(map(str,sorted(edges[a][b])))})')
print('edges',n, file=sys.stderr)
# SCC
import itertools
g={a:set(edges[a]) for a in mods}
idx={};low={};st=[];on=set();sccs=[];c=[0]
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
