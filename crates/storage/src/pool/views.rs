//! Leaf views: decoded copies of pages kept in the pool's spare frames (`crate::views`).

use super::*;

impl BufferPool {
    /// Bytes views may hold now: the free frames less a reserve of a 64th of the arena (and
    /// [`FRAMES_MIN`] frames). Every frame taken from the free queue shrinks the views to this
    /// room first, so they are gone before the pool has to evict. The reserve was an eighth:
    /// where the pool holds the decoded size and a half (the storage benchmark's fits_decoded
    /// budget), the compressed pages and the views of all their leaves together need about
    /// that much, and an eighth held back left a quarter of the leaves of an sbtest table
    /// without a view (range_100 at 0.58–0.60 of none; 0.83–0.91 with a 64th).
    pub(super) fn view_room(&self) -> usize {
        if !self.views_on.load(Ordering::Relaxed) {
            return 0;
        }
        let reserve = FRAMES_MIN + self.frame_count / 64;
        self.free.len().saturating_sub(reserve) * self.page_size
    }

    /// Turns views on (the default) or off (dropping those kept): benchmarks compare both,
    /// and tests count decodes without them.
    pub fn set_views(&self, on: bool) {
        self.views_on.store(on, Ordering::Relaxed);
        if !on {
            self.views.shrink(0);
        }
    }

    /// The view kept for the page `g` latches (of type `T`), as it is now or with the changes
    /// since; otherwise whether building one of about `bytes` bytes is advised: there is room
    /// for it, and the page has not been changing between visits (see [`crate::views`]).
    pub fn view<T: std::any::Any + Send + Sync>(
        &self,
        g: &PageReadGuard<'_>,
        bytes: usize,
    ) -> ViewLookup<T> {
        if !self.views_on.load(Ordering::Relaxed) {
            return ViewLookup::Skip;
        }
        let room = self.view_room();
        if self.views.bytes() == 0 && room < bytes {
            return ViewLookup::Skip;
        }
        let typed = |v: View| v.downcast::<T>().ok();
        match self.views.get(g.id, g.version(), room) {
            Lookup::Hit(v) => typed(v).map_or(ViewLookup::Skip, ViewLookup::Hit),
            Lookup::Changed(v, ch) => {
                typed(v).map_or(ViewLookup::Skip, |v| ViewLookup::Changed(v, ch))
            }
            Lookup::Miss { build } if build && self.views.fits(bytes, room) => ViewLookup::Build,
            Lookup::Miss { .. } => ViewLookup::Skip,
        }
    }

    /// Tells the page's view, if one is kept, that the holder of `g` set `key` to `value`
    /// (`None`: removed it); see [`crate::views::PageViews::note_change`].
    pub fn note_view_change(&self, g: &PageWriteGuard<'_>, key: &[u8], value: Option<&[u8]>) {
        if self.views.bytes() > 0 {
            let version = g.slot.state.load(Ordering::Acquire) >> 8;
            self.views.note_change(g.id, version, key, value);
        }
    }

    /// Keeps `view`, about `bytes` bytes derived from the page `g` latches, while the page is
    /// unchanged and the pool does not need the memory. Returns whether it was kept.
    pub fn put_view(&self, g: &PageReadGuard<'_>, view: View, bytes: usize) -> bool {
        self.views
            .put(g.id, g.version(), view, bytes, self.view_room())
    }
}
