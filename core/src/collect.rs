//! A trace's bookkeeping as `convert/facts.py TraceFacts.add` does it for a `FactSpan` or a
//! `SpanHead`, over compact Rust values: span ids as `u64` (`0`: no parent), the conversation
//! and case ids as text. It knows nothing of Python: the facts kept (`F`) and the resource
//! (`R`) are the caller's (`py/coretrace.rs` keeps Python objects in them), so the rules are
//! tested here with plain values.

use std::collections::HashSet;

/// Spans a trace holds before it indexes their ids (below, a scan is as quick).
const SCANNED: usize = 32;

/// What the bookkeeping reads of one arriving span.
#[derive(Clone, Copy, Debug, Default)]
pub struct Arrival<'a> {
    pub span_id: u64,
    /// `0` for a root.
    pub parent: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub status_code: i32,
    /// Whether the span's resource has attributes (Python's truth of the dict).
    pub resource_set: bool,
    /// A fact span whose conversation and case ids the trace notes (`FactSpan.noted`):
    /// `(conversation, case_id)`.
    pub noted: Option<(Option<&'a str>, Option<&'a str>)>,
}

/// `STATUS_ERROR` of `otlp/decode/span.py`.
const STATUS_ERROR: i32 = 2;

/// The spans of one trace seen so far (`TraceFacts` without `merge`, logs or content).
#[derive(Debug)]
pub struct Book<F, R> {
    pub max_spans: i64,
    /// The ids of `parents`, once there are more than `SCANNED`.
    seen: Option<HashSet<u64>>,
    /// (span id, parent id or 0) of every span recorded, in arrival order.
    pub parents: Vec<(u64, u64)>,
    /// The facts of the spans that have one, in arrival order.
    pub facts: Vec<F>,
    pub resource: Option<R>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// (start, span id) of every span with error status.
    pub error_spans: Vec<(u64, u64)>,
    /// (start, 0 for a root else 1, id) of the earliest span naming a conversation.
    pub conversation: Option<(u64, u8, Box<str>)>,
    pub case_id: Option<Box<str>>,
    /// Spans refused because the trace held `max_spans`.
    pub dropped: u64,
}

impl<F, R> Book<F, R> {
    pub fn new(max_spans: i64) -> Self {
        Self {
            max_spans,
            seen: None,
            parents: Vec::new(),
            facts: Vec::new(),
            resource: None,
            start_ns: 0,
            end_ns: 0,
            error_spans: Vec::new(),
            conversation: None,
            case_id: None,
            dropped: 0,
        }
    }

    /// Record `span` as `TraceFacts.add` does; `resource` makes its resource when the trace
    /// takes it. False when it is not recorded (a duplicate: the first copy stays; or over
    /// the limit: counted in `dropped`); the caller then keeps no fact of it.
    pub fn admit(&mut self, span: &Arrival<'_>, resource: impl FnOnce() -> R) -> bool {
        if self.has(span.span_id) {
            return false;
        }
        if self.parents.len() as i64 >= self.max_spans {
            self.dropped += 1;
            return false;
        }
        self.parents.push((span.span_id, span.parent));
        match &mut self.seen {
            Some(seen) => {
                seen.insert(span.span_id);
            }
            None if self.parents.len() > SCANNED => {
                self.seen = Some(self.parents.iter().map(|(id, _)| *id).collect());
            }
            None => {}
        }
        if (span.parent == 0 || self.resource.is_none()) && span.resource_set {
            self.resource = Some(resource());
        }
        let (start, end) = (span.start_ns, span.end_ns);
        if start != 0 && (self.start_ns == 0 || start < self.start_ns) {
            self.start_ns = start;
        }
        if end > self.end_ns {
            self.end_ns = end;
        }
        if span.status_code == STATUS_ERROR {
            self.error_spans.push((start, span.span_id));
        }
        if let Some((conversation, case_id)) = span.noted {
            if let Some(conversation) = conversation {
                let key = (start, u8::from(span.parent != 0));
                let earlier = match &self.conversation {
                    None => true,
                    Some((held_start, held_root, _)) => key < (*held_start, *held_root),
                };
                if earlier {
                    self.conversation = Some((key.0, key.1, conversation.into()));
                }
            }
            if self.case_id.is_none() {
                self.case_id = case_id.map(Into::into);
            }
        }
        true
    }

    /// Whether span `id` was recorded.
    fn has(&self, id: u64) -> bool {
        match &self.seen {
            Some(seen) => seen.contains(&id),
            None => self.parents.iter().any(|(held, _)| *held == id),
        }
    }

    /// `TraceFacts.span_count`.
    pub fn span_count(&self) -> usize {
        self.parents.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(span_id: u64, parent: u64, start_ns: u64) -> Arrival<'static> {
        Arrival {
            span_id,
            parent,
            start_ns,
            end_ns: start_ns + 10,
            ..Arrival::default()
        }
    }

    #[test]
    fn a_duplicate_keeps_the_first_copy_and_is_not_dropped() {
        let mut book: Book<u64, u32> = Book::new(10);
        assert!(book.admit(&span(7, 0, 100), || 1));
        let again = Arrival {
            status_code: STATUS_ERROR,
            ..span(7, 3, 5)
        };
        assert!(!book.admit(&again, || 2));
        assert_eq!(book.parents, vec![(7, 0)]);
        assert_eq!((book.start_ns, book.end_ns, book.dropped), (100, 110, 0));
        assert!(book.error_spans.is_empty());
    }

    #[test]
    fn duplicates_are_found_past_the_scanned_spans() {
        let mut book: Book<u64, u32> = Book::new(1_000);
        for id in 1..=200 {
            assert!(book.admit(&span(id, 0, id), || 0));
        }
        for id in 1..=200 {
            assert!(!book.admit(&span(id, 0, 1), || 0));
        }
        assert_eq!((book.span_count(), book.dropped), (200, 0));
    }

    #[test]
    fn spans_over_the_limit_are_counted_and_not_recorded() {
        let mut book: Book<u64, u32> = Book::new(2);
        for id in 1..=5 {
            book.admit(&span(id, 0, id * 10), || 0);
        }
        assert_eq!(book.span_count(), 2);
        assert_eq!(book.dropped, 3);
        assert_eq!(book.start_ns, 10);
        assert_eq!(book.end_ns, 30);
        // a duplicate of a recorded span is not a drop, even at the limit
        book.admit(&span(1, 0, 10), || 0);
        assert_eq!(book.dropped, 3);
    }

    #[test]
    fn a_root_resource_wins_and_an_empty_one_never_does() {
        let mut book: Book<u64, u32> = Book::new(10);
        let child = |id, set| Arrival {
            resource_set: set,
            ..span(id, 1, 5)
        };
        book.admit(&child(2, false), || 9);
        assert_eq!(book.resource, None);
        book.admit(&child(3, true), || 3);
        book.admit(&child(4, true), || 4);
        assert_eq!(book.resource, Some(3)); // a child's only while the trace has none
        let root = |id, set| Arrival {
            resource_set: set,
            ..span(id, 0, 5)
        };
        book.admit(&root(5, false), || 5);
        assert_eq!(book.resource, Some(3));
        book.admit(&root(6, true), || 6);
        assert_eq!(book.resource, Some(6));
    }

    #[test]
    fn the_earliest_conversation_wins_a_root_before_a_child_at_one_start() {
        let mut book: Book<u64, u32> = Book::new(10);
        let noted = |id, parent, start, conv| Arrival {
            noted: Some((Some(conv), None)),
            ..span(id, parent, start)
        };
        book.admit(&noted(1, 9, 50, "child-late"), || 0);
        book.admit(&noted(2, 9, 20, "child"), || 0);
        assert_eq!(book.conversation, Some((20, 1, "child".into())));
        book.admit(&noted(3, 9, 20, "child-same-start"), || 0);
        assert_eq!(book.conversation, Some((20, 1, "child".into())));
        book.admit(&noted(4, 0, 20, "root"), || 0);
        assert_eq!(book.conversation, Some((20, 0, "root".into())));
        book.admit(&noted(5, 0, 20, "root-again"), || 0);
        assert_eq!(book.conversation, Some((20, 0, "root".into())));
        // a span that is not noted names no conversation
        let quiet = span(6, 0, 1);
        book.admit(&quiet, || 0);
        assert_eq!(book.conversation, Some((20, 0, "root".into())));
    }

    #[test]
    fn the_first_case_id_of_a_noted_span_stays() {
        let mut book: Book<u64, u32> = Book::new(10);
        let noted = |id, case| Arrival {
            noted: Some((None, case)),
            ..span(id, 0, 1)
        };
        book.admit(&noted(1, None), || 0);
        assert_eq!(book.case_id, None);
        book.admit(&noted(2, Some("a")), || 0);
        book.admit(&noted(3, Some("b")), || 0);
        assert_eq!(book.case_id.as_deref(), Some("a"));
    }

    #[test]
    fn error_spans_and_times_as_python_keeps_them() {
        let mut book: Book<u64, u32> = Book::new(10);
        let failed = |id, start| Arrival {
            status_code: STATUS_ERROR,
            ..span(id, 0, start)
        };
        book.admit(&failed(1, 0), || 0); // start 0 does not set the trace's start
        book.admit(&failed(2, 30), || 0);
        book.admit(&span(3, 0, 20), || 0);
        assert_eq!(book.error_spans, vec![(0, 1), (30, 2)]);
        assert_eq!((book.start_ns, book.end_ns), (20, 40));
    }
}
