//! Deletes and what they leave behind: the optimistic and pessimistic delete paths, merging
//! or re-balancing an underfull node with a sibling, root collapse, and freeing a whole tree
//! (the protocol is in the module docs of [`super`]).

use zipdb_storage::pool::PageWriteGuard;
use zipdb_storage::{PageId, PageType};

use super::compact_tree::{classic, Visit};
use super::node::{
    self, build_node, collect_cells, inner_cell, insert_raw, raw_cell_child, raw_cell_key,
    remove_cell, set_page_type, shortest_separator, split_point, INNER_CELL_HDR, SLOT_LEN,
};
use super::{chain_of, BTree, DelOutcome, Path};
use crate::error::{Error, Result};

impl BTree {
    pub(super) fn delete_optimistic_any(&self, key: &[u8]) -> Result<Option<DelOutcome>> {
        match self.is_compact() {
            true => self.c_delete_optimistic(key),
            false => self.delete_optimistic(key),
        }
    }

    pub(super) fn delete_optimistic(&self, key: &[u8]) -> Result<Option<DelOutcome>> {
        let Some(mut g) = self.descend_leaf_write(key, None)? else {
            return Ok(None);
        };
        let id = g.id();
        let n = self.node(id, &g, Some(0))?;
        match n.search(key)? {
            Err(_) => Ok(Some(DelOutcome::NotFound)),
            Ok(i) => {
                let len = n.cell_len(i)? + SLOT_LEN;
                if id != self.root && n.used() - len < self.limits.underfull {
                    return Ok(None);
                }
                let chain = chain_of(n.value(i)?);
                remove_cell(id, &mut g, i)?;
                Ok(Some(DelOutcome::Deleted(chain)))
            }
        }
    }

    pub(super) fn delete_pessimistic(&self, key: &[u8]) -> Result<DelOutcome> {
        let lim = self.limits;
        let (path, mut cur) = self.descend_exclusive(
            key,
            classic(|n| {
                if !n.is_leaf() {
                    return Ok(n.used() >= lim.underfull + lim.max_inner_entry());
                }
                Ok(match n.search(key)? {
                    Ok(i) => n.used() >= lim.underfull + n.cell_len(i)? + SLOT_LEN,
                    Err(_) => true,
                })
            }),
        )?;
        let id = cur.id();
        let n = self.node(id, &cur, Some(0))?;
        let Ok(i) = n.search(key)? else {
            return Ok(DelOutcome::NotFound);
        };
        let chain = chain_of(n.value(i)?);
        remove_cell(id, &mut cur, i)?;
        self.rebalance(path, cur)?;
        Ok(DelOutcome::Deleted(chain))
    }

    /// Fixes underfull nodes from `cur` upwards along the latched `path`.
    pub(super) fn rebalance<'a>(
        &'a self,
        mut path: Path<'a>,
        mut cur: PageWriteGuard<'a>,
    ) -> Result<()> {
        let lim = self.limits;
        loop {
            let id = cur.id();
            let (level, used, count) = match self.visit(id, &cur, None)? {
                Visit::Node(n) => (n.level(), n.used(), n.count()),
                Visit::Compact(l) => (0, l.used(), l.count()),
            };
            if id == self.root {
                if level > 0 && count == 0 {
                    self.collapse_root(cur)?;
                }
                return Ok(());
            }
            if used >= lim.underfull {
                return Ok(());
            }
            let Some((mut parent, idx)) = path.pop() else {
                return Ok(());
            };
            let pid = parent.id();
            let (pcount, left_id, right_id, sep_idx, sep_key) = {
                let pn = self.node(pid, &parent, Some(level + 1))?;
                let pcount = pn.count();
                if pcount == 0 {
                    (0, PageId::NONE, PageId::NONE, 0, Vec::new())
                } else if idx < pcount {
                    (
                        pcount,
                        pn.child(idx)?,
                        pn.child(idx + 1)?,
                        idx,
                        pn.key(idx)?.to_vec(),
                    )
                } else {
                    (
                        pcount,
                        pn.child(idx - 1)?,
                        pn.child(idx)?,
                        idx - 1,
                        pn.key(idx - 1)?.to_vec(),
                    )
                }
            };
            if pcount == 0 {
                // No sibling (degenerate parent): let the parent be handled.
                drop(cur);
                cur = parent;
                continue;
            }
            let (mut left, mut right) = if left_id == id {
                let r = self.pool.write(right_id)?;
                (cur, r)
            } else {
                drop(cur);
                let l = self.pool.write(left_id)?;
                let r = self.pool.write(right_id)?;
                (l, r)
            };
            let leaf = level == 0;
            if leaf && self.is_compact() {
                self.c_rebalance_leaves(&mut parent, left, right, sep_idx)?;
                cur = parent;
                continue;
            }
            let (lused, rused, llink, rlink, mut cells) = {
                let ln = self.node(left_id, &left, Some(level))?;
                let rn = self.node(right_id, &right, Some(level))?;
                let mut cells = collect_cells(&ln)?;
                if !leaf {
                    cells.push(inner_cell(&sep_key, rn.link()));
                }
                cells.extend(collect_cells(&rn)?);
                (ln.used(), rn.used(), ln.link(), rn.link(), cells)
            };
            let sep_extra = if leaf {
                0
            } else {
                INNER_CELL_HDR + sep_key.len() + SLOT_LEN
            };
            if lused + rused + sep_extra <= lim.usable {
                // Merge right into left.
                let refs: Vec<&[u8]> = cells.iter().map(|c| c.as_slice()).collect();
                build_node(&mut left, level, if leaf { rlink } else { llink }, &refs);
                self.pool.free(right)?;
                drop(left);
                remove_cell(pid, &mut parent, sep_idx)?;
            } else if lused < lim.underfull || rused < lim.underfull {
                // Redistribute, if the parent can take the new separator.
                let refs: Vec<&[u8]> = cells.iter().map(|c| c.as_slice()).collect();
                let m = split_point(&refs, leaf, lim.usable);
                let new_sep: Vec<u8> = if leaf {
                    shortest_separator(raw_cell_key(refs[m - 1], true), raw_cell_key(refs[m], true))
                        .to_vec()
                } else {
                    raw_cell_key(refs[m], false).to_vec()
                };
                let (pfree, old_len) = {
                    let pn = self.node(pid, &parent, Some(level + 1))?;
                    (pn.free_total(), pn.cell_len(sep_idx)?)
                };
                if pfree + old_len >= INNER_CELL_HDR + new_sep.len() {
                    if leaf {
                        build_node(&mut left, 0, right_id, &refs[..m]);
                        build_node(&mut right, 0, rlink, &refs[m..]);
                    } else {
                        build_node(&mut left, level, llink, &refs[..m]);
                        build_node(&mut right, level, raw_cell_child(refs[m]), &refs[m + 1..]);
                    }
                    drop(left);
                    drop(right);
                    remove_cell(pid, &mut parent, sep_idx)?;
                    if !insert_raw(pid, &mut parent, sep_idx, &inner_cell(&new_sep, right_id))? {
                        return Err(Error::corrupt(
                            pid,
                            "separator did not fit after redistribution",
                        ));
                    }
                }
                cells.clear();
            }
            cur = parent;
        }
    }

    /// The root has one child and no separator: move the child's contents into the root.
    pub(super) fn collapse_root(&self, mut root: PageWriteGuard<'_>) -> Result<()> {
        loop {
            let (level, count, child_id) = match self.visit(root.id(), &root, None)? {
                Visit::Node(n) => (n.level(), n.count(), n.link()),
                Visit::Compact(_) => return self.c_check_root_leaf(&root),
            };
            if level == 0 || count > 0 {
                return Ok(());
            }
            let child = self.pool.write(child_id)?;
            let is_leaf = self.inner(child_id, &child, Some(level - 1))?.is_none();
            root[node::OFF_LEVEL..].copy_from_slice(&child[node::OFF_LEVEL..]);
            set_page_type(
                &mut root,
                if is_leaf {
                    PageType::Leaf
                } else {
                    PageType::Inner
                },
            );
            self.pool.free(child)?;
        }
    }

    /// Frees every page of the tree (the tree must not be used concurrently or afterwards).
    pub fn free_all(&self) -> Result<()> {
        self.free_subtree(self.root, None)
    }

    pub(super) fn free_subtree(&self, id: PageId, level: Option<u8>) -> Result<()> {
        let (children, chains, child_level) = 'node: {
            let g = self.pool.read(id)?;
            let n = match self.visit(id, &g, level)? {
                Visit::Node(n) => n,
                Visit::Compact(l) => break 'node (Vec::new(), self.c_leaf_chains(&l)?, 0),
            };
            let mut children = Vec::new();
            let mut chains = Vec::new();
            if n.is_leaf() {
                for i in 0..n.count() {
                    if let Some(c) = chain_of(n.value(i)?) {
                        chains.push(c);
                    }
                }
            } else {
                for i in 0..=n.count() {
                    children.push(n.child(i)?);
                }
            }
            (children, chains, n.level().saturating_sub(1))
        };
        for c in children {
            self.free_subtree(c, Some(child_level))?;
        }
        for c in chains {
            self.free_chain(c)?;
        }
        let g = self.pool.write(id)?;
        self.pool.free(g)?;
        Ok(())
    }
}
