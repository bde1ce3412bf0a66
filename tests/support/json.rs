//! A small JSON reader for the fixtures the specs share with these tests
//! (spec/fixtures/*.json): the core has no JSON dependency, and a fixture
//! must be read whole, whatever its layout, not line by line.

/// A JSON value. A number keeps its text: the fixtures compare it as
/// written, and the Lua under test prints its numbers the same way.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in the order written.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses `text`, one JSON value with whitespace around; panics, naming
    /// the offset, on anything else (a broken fixture).
    pub fn parse(text: &str) -> Json {
        let mut reader = Reader {
            chars: text.char_indices().peekable(),
        };
        let value = reader.value();
        reader.skip_whitespace();
        if let Some((at, c)) = reader.chars.next() {
            panic!("JSON: {c:?} after the value, at byte {at}");
        }
        value
    }

    /// Member `name` of an object; panics if absent or not an object.
    pub fn get(&self, name: &str) -> &Json {
        match self {
            Json::Object(members) => members
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("JSON: no member {name:?}")),
            other => panic!("JSON: {other:?} is not an object (looking for {name:?})"),
        }
    }

    pub fn has(&self, name: &str) -> bool {
        matches!(self, Json::Object(members) if members.iter().any(|(n, _)| n == name))
    }

    pub fn as_str(&self) -> &str {
        match self {
            Json::String(s) => s,
            other => panic!("JSON: {other:?} is not a string"),
        }
    }

    pub fn as_array(&self) -> &[Json] {
        match self {
            Json::Array(items) => items,
            other => panic!("JSON: {other:?} is not an array"),
        }
    }

    pub fn as_bool(&self) -> bool {
        match self {
            Json::Bool(b) => *b,
            other => panic!("JSON: {other:?} is not true or false"),
        }
    }
}

struct Reader<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
}

impl Reader<'_> {
    fn skip_whitespace(&mut self) {
        while self
            .chars
            .next_if(|(_, c)| matches!(c, ' ' | '\t' | '\n' | '\r'))
            .is_some()
        {}
    }

    fn next(&mut self) -> (usize, char) {
        self.chars.next().expect("JSON: unexpected end")
    }

    fn expect(&mut self, want: char) {
        let (at, c) = self.next();
        assert_eq!(c, want, "JSON: expected {want:?} at byte {at}");
    }

    fn value(&mut self) -> Json {
        self.skip_whitespace();
        let &(at, c) = self.chars.peek().expect("JSON: unexpected end");
        match c {
            '{' => self.object(),
            '[' => self.array(),
            '"' => Json::String(self.string()),
            't' => self.word("true", Json::Bool(true)),
            'f' => self.word("false", Json::Bool(false)),
            'n' => self.word("null", Json::Null),
            '-' | '0'..='9' => self.number(),
            other => panic!("JSON: unexpected {other:?} at byte {at}"),
        }
    }

    fn word(&mut self, word: &str, value: Json) -> Json {
        for want in word.chars() {
            self.expect(want);
        }
        value
    }

    fn number(&mut self) -> Json {
        let mut text = String::new();
        while let Some((_, c)) = self
            .chars
            .next_if(|(_, c)| matches!(c, '-' | '+' | '.' | 'e' | 'E' | '0'..='9'))
        {
            text.push(c);
        }
        Json::Number(text)
    }

    fn array(&mut self) -> Json {
        self.expect('[');
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.chars.next_if(|(_, c)| *c == ']').is_some() {
            return Json::Array(items);
        }
        loop {
            items.push(self.value());
            self.skip_whitespace();
            match self.next() {
                (_, ',') => continue,
                (_, ']') => return Json::Array(items),
                (at, c) => panic!("JSON: {c:?} in an array at byte {at}"),
            }
        }
    }

    fn object(&mut self) -> Json {
        self.expect('{');
        let mut members = Vec::new();
        self.skip_whitespace();
        if self.chars.next_if(|(_, c)| *c == '}').is_some() {
            return Json::Object(members);
        }
        loop {
            self.skip_whitespace();
            let name = self.string();
            self.skip_whitespace();
            self.expect(':');
            members.push((name, self.value()));
            self.skip_whitespace();
            match self.next() {
                (_, ',') => continue,
                (_, '}') => return Json::Object(members),
                (at, c) => panic!("JSON: {c:?} in an object at byte {at}"),
            }
        }
    }

    fn string(&mut self) -> String {
        self.expect('"');
        let mut out = String::new();
        loop {
            match self.next() {
                (_, '"') => return out,
                (_, '\\') => match self.next() {
                    (_, 'u') => {
                        let unit = self.hex4();
                        // A character beyond the BMP: a surrogate pair.
                        let code = if (0xD800..0xDC00).contains(&unit) {
                            self.expect('\\');
                            self.expect('u');
                            0x10000 + ((unit - 0xD800) << 10) + (self.hex4() - 0xDC00)
                        } else {
                            unit
                        };
                        out.push(char::from_u32(code).expect("JSON: a \\u escape of no character"));
                    }
                    (_, 'n') => out.push('\n'),
                    (_, 't') => out.push('\t'),
                    (_, 'r') => out.push('\r'),
                    (_, 'f') => out.push('\x0c'),
                    (_, 'b') => out.push('\x08'),
                    (_, c @ ('"' | '\\' | '/')) => out.push(c),
                    (at, c) => panic!("JSON: escape \\{c} at byte {at}"),
                },
                (_, c) => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> u32 {
        let hex: String = (0..4).map(|_| self.next().1).collect();
        u32::from_str_radix(&hex, 16).unwrap_or_else(|_| panic!("JSON: \\u{hex}"))
    }
}
