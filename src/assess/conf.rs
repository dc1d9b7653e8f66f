//! `redis.conf` and `sentinel.conf` lines, split as Redis splits them (`sdssplitargs`: words
//! separated by blanks, `"..."` with backslash escapes, `'...'` taken as written).

/// One directive: its 1-based line and its words.
pub type Directive = (usize, Vec<String>);

/// The directives of a file, comments and blank lines left out; an error is `(line, why)`.
pub fn directives(text: &str) -> Result<Vec<Directive>, (usize, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words = split(line).map_err(|e| (i + 1, e))?;
        if !words.is_empty() {
            out.push((i + 1, words));
        }
    }
    Ok(out)
}

fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Ok(words);
        };
        let mut w = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                if c == first {
                    closed = true;
                    break;
                }
                if c == '\\' && first == '"' {
                    match chars.next() {
                        Some('n') => w.push('\n'),
                        Some('t') => w.push('\t'),
                        Some(o) => w.push(o),
                        None => break,
                    }
                } else {
                    w.push(c);
                }
            }
            if !closed {
                return Err(format!("unbalanced quotes ({first}) in this line"));
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return Err("a closing quote must be followed by a space".into());
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        words.push(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_quotes_and_comments_split_as_redis_splits_them() {
        let d = directives(
            "# c\n\nappendfsync always\nsave \"\"\nsentinel monitor m 10.0.0.1 6379 2\n",
        )
        .unwrap();
        assert_eq!(d[0], (3, vec!["appendfsync".into(), "always".into()]));
        assert_eq!(d[1], (4, vec!["save".into(), String::new()]));
        assert_eq!(d[2].1.len(), 6);
        assert_eq!(directives("a \"b\nc d\n").unwrap_err().0, 1);
        assert_eq!(directives("ok 1\nx 'y'z\n").unwrap_err().0, 2);
    }
}
