//! The collection of a trace's spans in the core (`collect.rs`, `Book::admit`), held to a
//! plain model of `convert/facts.py` `TraceFacts.add` written the obvious way (every id
//! looked up by a scan, no index): arrivals made from the input with few ids (so duplicates
//! are common and a trace passes the 32 spans `Book` scans before it indexes), a small span
//! limit, roots, error spans, resources and conversation and case ids. Both must agree on
//! every field.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltrail_core::collect::{Arrival, Book};

/// `TraceFacts.add` for `SpanHead` and `FactSpan`, as Python writes it.
#[derive(Default)]
struct Model {
    parents: Vec<(u64, u64)>,
    /// The arrival that set the resource.
    resource: Option<usize>,
    start_ns: u64,
    end_ns: u64,
    error_spans: Vec<(u64, u64)>,
    conversation: Option<(u64, u8, String)>,
    case_id: Option<String>,
    dropped: u64,
}

impl Model {
    fn add(&mut self, max_spans: usize, at: usize, span: &Arrival<'_>) -> bool {
        if self.parents.iter().any(|(id, _)| *id == span.span_id) {
            return false;
        }
        if self.parents.len() >= max_spans {
            self.dropped += 1;
            return false;
        }
        self.parents.push((span.span_id, span.parent));
        if (span.parent == 0 || self.resource.is_none()) && span.resource_set {
            self.resource = Some(at);
        }
        if span.start_ns != 0 && (self.start_ns == 0 || span.start_ns < self.start_ns) {
            self.start_ns = span.start_ns;
        }
        self.end_ns = self.end_ns.max(span.end_ns);
        if span.status_code == 2 {
            self.error_spans.push((span.start_ns, span.span_id));
        }
        if let Some((conversation, case_id)) = span.noted {
            if let Some(conversation) = conversation {
                let key = (span.start_ns, u8::from(span.parent != 0));
                let earlier = self
                    .conversation
                    .as_ref()
                    .is_none_or(|(start, root, _)| key < (*start, *root));
                if earlier {
                    self.conversation = Some((key.0, key.1, conversation.to_string()));
                }
            }
            if self.case_id.is_none() {
                self.case_id = case_id.map(str::to_string);
            }
        }
        true
    }
}

const CONVERSATIONS: [&str; 3] = ["c1", "c2", ""];
const CASES: [&str; 2] = ["case-a", "case-b"];

fuzz_target!(|data: &[u8]| {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let max_spans = usize::from(limit % 64);
    let mut book: Book<usize, usize> = Book::new(max_spans as i64);
    let mut model = Model::default();
    for (at, chunk) in rest.chunks_exact(4).enumerate() {
        let [id, parent, time, flags] = [chunk[0], chunk[1], chunk[2], chunk[3]];
        let noted = (flags & 4 != 0).then(|| {
            let conversation = (flags & 8 != 0).then(|| CONVERSATIONS[usize::from(flags >> 6) % 3]);
            let case_id = (flags & 16 != 0).then(|| CASES[usize::from(flags >> 7)]);
            (conversation, case_id)
        });
        let span = Arrival {
            span_id: u64::from(id % 48) + 1,
            parent: u64::from(parent % 6),
            start_ns: u64::from(time >> 4),
            end_ns: u64::from(time & 15) * 7,
            status_code: i32::from(flags & 3),
            resource_set: flags & 32 != 0,
            noted,
        };
        let kept = book.admit(&span, || at);
        assert_eq!(kept, model.add(max_spans, at, &span));
        if kept {
            book.facts.push(at);
        }
    }
    assert_eq!(book.parents, model.parents);
    assert_eq!(book.span_count(), model.parents.len());
    assert_eq!(book.resource, model.resource);
    assert_eq!((book.start_ns, book.end_ns), (model.start_ns, model.end_ns));
    assert_eq!(book.error_spans, model.error_spans);
    let conversation = book
        .conversation
        .as_ref()
        .map(|(s, r, c)| (*s, *r, c.to_string()));
    assert_eq!(conversation, model.conversation);
    assert_eq!(book.case_id.as_deref(), model.case_id.as_deref());
    assert_eq!(book.dropped, model.dropped);
});
