//! A YAML (or JSON: YAML 1.2 reads it) document as a tree whose every key and value keeps
//! its line, read with yaml-rust2's event parser: `assess` names the line of each key it maps
//! and of each one it does not understand.
//!
//! Aliases are refused rather than expanded (an alias of an alias of ... is the "billion
//! laughs" allocation), and so are documents nested deeper than `MAX_DEPTH`.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// Deeper than any configuration file is nested.
const MAX_DEPTH: usize = 64;

/// One value, with the line (1-based) it starts on.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Scalar(String, usize),
    Seq(Vec<Node>, usize),
    /// Keys in file order (a key given twice is refused while reading).
    Map(Vec<(String, usize, Node)>, usize),
}

impl Node {
    pub fn line(&self) -> usize {
        match self {
            Node::Scalar(_, l) | Node::Seq(_, l) | Node::Map(_, l) => *l,
        }
    }
    pub fn as_map(&self) -> Option<&[(String, usize, Node)]> {
        match self {
            Node::Map(m, _) => Some(m),
            _ => None,
        }
    }
    /// The text of a scalar; a sequence or map is `None`.
    pub fn scalar(&self) -> Option<&str> {
        match self {
            Node::Scalar(s, _) => Some(s),
            _ => None,
        }
    }
    /// A value as the report prints it: a scalar as written, a list by its length.
    pub fn show(&self) -> String {
        match self {
            Node::Scalar(s, _) => s.clone(),
            Node::Seq(v, _) => format!("[{} items]", v.len()),
            Node::Map(m, _) => format!("{{{} keys}}", m.len()),
        }
    }
}

enum Open {
    Seq(Vec<Node>, usize),
    /// The entries so far, and a key read whose value has not come yet.
    Map(Vec<(String, usize, Node)>, usize, Option<(String, usize)>),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    root: Option<Node>,
    error: Option<(usize, String)>,
    documents: usize,
}

impl Builder {
    fn fail(&mut self, line: usize, msg: String) {
        if self.error.is_none() {
            self.error = Some((line, msg));
        }
    }

    fn add(&mut self, n: Node) {
        let line = n.line();
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(n);
                }
            }
            Some(Open::Seq(v, _)) => v.push(n),
            Some(Open::Map(entries, _, pending)) => match pending.take() {
                None => match n {
                    Node::Scalar(k, kl) => {
                        if entries.iter().any(|(e, _, _)| *e == k) {
                            self.fail(kl, format!("key `{k}` is given twice"));
                        } else {
                            *pending = Some((k, kl));
                        }
                    }
                    _ => self.fail(line, "a key must be a plain word".into()),
                },
                Some((k, kl)) => entries.push((k, kl, n)),
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        let line = mark.line();
        match ev {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    self.fail(
                        line,
                        "one document per file is read (a second `---` found)".into(),
                    );
                }
            }
            Event::Alias(_) => self.fail(
                line,
                "aliases (`*name`) are not read: write the value out".into(),
            ),
            Event::Scalar(s, ..) => self.add(Node::Scalar(s, line)),
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if self.stack.len() >= MAX_DEPTH {
                    self.fail(line, format!("nested deeper than {MAX_DEPTH} levels"));
                    return;
                }
                self.stack.push(match ev {
                    Event::SequenceStart(..) => Open::Seq(Vec::new(), line),
                    _ => Open::Map(Vec::new(), line, None),
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let n = match self.stack.pop() {
                    Some(Open::Seq(v, l)) => Node::Seq(v, l),
                    Some(Open::Map(m, l, _)) => Node::Map(m, l),
                    None => return,
                };
                self.add(n);
            }
            _ => {}
        }
    }
}

/// The document of `text`; errors are `(line, message)`.
pub fn parse(text: &str) -> Result<Node, (usize, String)> {
    let mut b = Builder::default();
    let mut p = Parser::new_from_str(text);
    if let Err(e) = p.load(&mut b, true) {
        return Err((e.marker().line(), e.info().to_string()));
    }
    if let Some(e) = b.error {
        return Err(e);
    }
    b.root.ok_or((1, "the file holds no document".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_lines_in_yaml_and_in_json() {
        let y = parse("a: 1\nb:\n  c: x\n  d: [1, 2]\n").unwrap();
        let m = y.as_map().unwrap();
        assert_eq!((m[0].0.as_str(), m[0].1), ("a", 1));
        assert_eq!((m[1].0.as_str(), m[1].1), ("b", 2));
        let inner = m[1].2.as_map().unwrap();
        assert_eq!((inner[1].0.as_str(), inner[1].1), ("d", 4));
        let j = parse("{\n \"a\": 1,\n \"b\": {\"c\": \"x\"}\n}\n").unwrap();
        assert_eq!(j.as_map().unwrap()[1].1, 3);
    }

    #[test]
    fn aliases_repeated_keys_and_bad_syntax_are_located_errors() {
        assert_eq!(parse("a: &x 1\nb: *x\n").unwrap_err().0, 2);
        assert_eq!(parse("a: 1\na: 2\n").unwrap_err().0, 2);
        assert!(parse("a: [1, 2\nb: 3\n").is_err());
        let deep = "[".repeat(200);
        assert!(parse(&deep).is_err());
    }
}
