//! The SDK declaration a Code Mode program is written against: a
//! TypeScript `declare const tools: { … }` generated from the tools'
//! names, descriptions and JSON Schemas, with doc comments.
//!
//! The schema subset read: `type` (one or a list), `properties` and
//! `required`, `additionalProperties`, `items`, `enum`, `const`, `anyOf`,
//! `oneOf`, `allOf`, `description`, and local `$ref`s (`#/$defs/…`,
//! `#/definitions/…`). Anything else is `unknown`. The output is bounded:
//! nesting past [`MAX_DEPTH`] and references past it are `unknown`, and a
//! schema is followed through at most [`MAX_NODES`] subschemas (the rest
//! are `unknown`, and an object whose share is spent says how many of its
//! properties it does not list), so a hostile or cyclic schema (one whose
//! properties all refer back to the root, say) cannot blow up the
//! declaration: each type is at most about twice [`MAX_NODES`] lines
//! however the schema is built.

use serde_json::Value;

/// How deep a schema is followed before its type is `unknown`.
pub const MAX_DEPTH: usize = 12;

/// How many subschemas of one schema are read; past them, `unknown`.
pub const MAX_NODES: usize = 1000;

/// One tool as a program sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Its name; one that is not an identifier is quoted, and a program
    /// reaches it by bracket access (`tools["my-tool"](…)`).
    pub name: String,
    /// What it does, as the doc comment.
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of what it returns, when known; else `unknown`.
    pub output_schema: Option<Value>,
}

/// The declaration of `tools` as `tools.<name>(args)`.
pub fn declaration(tools: &[ToolSpec]) -> String {
    declaration_mixed(tools, &[])
}

/// The declaration of several servers' tools as
/// `tools.<server>.<name>(args)`.
pub fn declaration_by_server(servers: &[(String, Vec<ToolSpec>)]) -> String {
    declaration_mixed(&[], servers)
}

/// The declaration of tools of no server as `tools.<name>(args)` and of
/// each server's as `tools.<server>.<name>(args)`, in one `tools`.
pub fn declaration_mixed(top: &[ToolSpec], servers: &[(String, Vec<ToolSpec>)]) -> String {
    let mut out = String::from("declare const tools: {\n");
    members(top, 1, &mut out);
    for (server, tools) in servers {
        out.push_str(&format!("  {}: {{\n", key(server)));
        members(tools, 2, &mut out);
        out.push_str("  };\n");
    }
    out.push_str("};\n");
    out
}

fn members(tools: &[ToolSpec], level: usize, out: &mut String) {
    let pad = "  ".repeat(level);
    for t in tools {
        if let Some(d) = t.description.as_deref().filter(|d| !d.trim().is_empty()) {
            doc(d, &pad, out);
        }
        let args = Ts::new(&t.input_schema).ty(&t.input_schema, level, 0);
        let ret = match &t.output_schema {
            Some(s) => Ts::new(s).ty(s, level, 0),
            None => "unknown".to_owned(),
        };
        out.push_str(&format!(
            "{pad}{}(args: {args}): Promise<{ret}>;\n",
            key(&t.name)
        ));
    }
}

/// A doc comment, its text unable to close it early.
fn doc(text: &str, pad: &str, out: &mut String) {
    let text = text.trim().replace("*/", "*\\/");
    // One line of text is one line of comment: the declaration is read by
    // a model, and every line costs tokens.
    if !text.contains('\n') {
        out.push_str(&format!("{pad}/** {text} */\n"));
        return;
    }
    out.push_str(&format!("{pad}/**\n"));
    for line in text.lines() {
        out.push_str(&format!("{pad} * {}\n", line.trim_end()).replace(" * \n", " *\n"));
    }
    out.push_str(&format!("{pad} */\n"));
}

/// Whether `name` can stand as a property name unquoted.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c == '$' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c == '$' || c.is_ascii_alphanumeric())
}

/// A property or member name: as it is, or quoted.
fn key(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

/// A type in parentheses when it is a union or an intersection, so that it
/// binds as one inside another or before `[]`.
fn grouped(ty: &str) -> String {
    if !ty.starts_with('{') && (ty.contains(" | ") || ty.contains(" & ")) {
        format!("({ty})")
    } else {
        ty.to_owned()
    }
}

/// Converts one schema, resolving references against its root.
struct Ts<'a> {
    root: &'a Value,
    /// Subschemas still to be read (see [`MAX_NODES`]).
    left: std::cell::Cell<usize>,
}

impl<'a> Ts<'a> {
    fn new(root: &'a Value) -> Self {
        Ts {
            root,
            left: std::cell::Cell::new(MAX_NODES),
        }
    }

    fn resolve(&self, r: &str) -> Option<&'a Value> {
        let path = r.strip_prefix('#')?;
        self.root.pointer(path)
    }

    /// The TypeScript type of `s`, indented for `level`, `depth` deep.
    fn ty(&self, s: &'a Value, level: usize, depth: usize) -> String {
        // Every subschema read costs one, the ones past the depth bound
        // too: each line of the declaration is paid for.
        if self.left.get() == 0 {
            return "unknown".into();
        }
        self.left.set(self.left.get() - 1);
        if depth > MAX_DEPTH {
            return "unknown".into();
        }
        let Some(o) = s.as_object() else {
            // `true` accepts anything; `false` nothing.
            return if s == &Value::Bool(false) {
                "never".into()
            } else {
                "unknown".into()
            };
        };
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            return match self.resolve(r) {
                Some(target) => self.ty(target, level, depth + 1),
                None => "unknown".into(),
            };
        }
        if let Some(c) = o.get("const") {
            return c.to_string();
        }
        if let Some(e) = o.get("enum").and_then(Value::as_array) {
            if e.is_empty() {
                return "never".into();
            }
            return e
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" | ");
        }
        for (k, sep) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
            if let Some(alts) = o.get(k).and_then(Value::as_array).filter(|a| !a.is_empty()) {
                let parts: Vec<String> =
                    alts.iter().map(|a| self.ty(a, level, depth + 1)).collect();
                return parts
                    .iter()
                    .map(|p| grouped(p))
                    .collect::<Vec<_>>()
                    .join(sep);
            }
        }
        match o.get("type") {
            Some(Value::String(t)) => self.typed(t, o, level, depth),
            Some(Value::Array(ts)) => {
                let parts: Vec<String> = ts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.typed(t, o, level, depth))
                    .collect();
                if parts.is_empty() {
                    "unknown".into()
                } else {
                    parts.join(" | ")
                }
            }
            _ if o.contains_key("properties") => self.typed("object", o, level, depth),
            _ => "unknown".into(),
        }
    }

    fn typed(
        &self,
        t: &str,
        o: &'a serde_json::Map<String, Value>,
        level: usize,
        depth: usize,
    ) -> String {
        match t {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => match o.get("items") {
                Some(items) => format!("{}[]", grouped(&self.ty(items, level, depth + 1))),
                None => "unknown[]".into(),
            },
            "object" => self.object(o, level, depth),
            _ => "unknown".into(),
        }
    }

    fn object(&self, o: &'a serde_json::Map<String, Value>, level: usize, depth: usize) -> String {
        let props = o.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = o
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let extra = match o.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(s @ Value::Object(_)) => Some(self.ty(s, level + 1, depth + 1)),
            _ if props.is_some_and(|p| !p.is_empty()) => None,
            _ => Some("unknown".into()),
        };
        let Some(props) = props.filter(|p| !p.is_empty()) else {
            return match extra {
                Some(t) => format!("Record<string, {t}>"),
                None => "{}".into(),
            };
        };
        let pad = "  ".repeat(level + 1);
        let mut out = String::from("{\n");
        let mut extra = extra;
        for (i, (name, s)) in props.iter().enumerate() {
            if self.left.get() == 0 {
                // The schema's share is spent: the rest are not listed.
                out.push_str(&format!(
                    "{pad}/* {} more properties not shown */\n",
                    props.len() - i
                ));
                extra = Some("unknown".into());
                break;
            }
            if let Some(d) = s.get("description").and_then(Value::as_str) {
                doc(d, &pad, &mut out);
            }
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            out.push_str(&format!(
                "{pad}{}{opt}: {};\n",
                key(name),
                self.ty(s, level + 1, depth + 1)
            ));
        }
        if let Some(t) = extra {
            out.push_str(&format!("{pad}[key: string]: {t};\n"));
        }
        out.push_str(&"  ".repeat(level));
        out.push('}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, input: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: None,
            input_schema: input,
            output_schema: None,
        }
    }

    /// A schema whose every property refers back to the root grows as
    /// its fan-out to the depth bound: the node bound keeps the
    /// declaration small (about 150 bytes of schema, once 3 MB).
    #[test]
    fn a_recursive_schema_gives_a_declaration_of_bounded_size() {
        for fan_out in [2, 5, 8, 50] {
            let props: serde_json::Map<String, Value> = (0..fan_out)
                .map(|i| (format!("p{i}"), json!({"$ref": "#"})))
                .collect();
            let d = declaration(&[spec("t", json!({"type": "object", "properties": props}))]);
            assert!(d.contains("p0?:"), "{d}");
            // Each line costs a subschema, but the closing braces and the
            // notes of properties not shown, one each per open object.
            let lines = d.lines().count();
            assert!(
                lines <= 2 * MAX_NODES + 4 * MAX_DEPTH,
                "fan-out {fan_out}: {lines} lines"
            );
            assert!(
                d.len() < 100 * MAX_NODES,
                "fan-out {fan_out}: {} bytes",
                d.len()
            );
        }
    }

    #[test]
    fn a_shell_tool_reads_as_its_schema_says() {
        let bash = ToolSpec {
            name: "bash".into(),
            description: Some("Runs a shell command.\nIts output is bounded.".into()),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout": {"type": "integer"}
                },
                "required": ["command"]
            }),
            output_schema: Some(json!({"type": "string"})),
        };
        let d = declaration(&[bash]);
        assert_eq!(
            d,
            "declare const tools: {\n  /**\n   * Runs a shell command.\n   * Its output is bounded.\n   */\n  bash(args: {\n    /** The command line. */\n    command: string;\n    timeout?: number;\n  }): Promise<string>;\n};\n"
        );
    }

    #[test]
    fn enums_unions_arrays_and_references_become_their_types() {
        let s = json!({
            "type": "object",
            "properties": {
                "mode": {"enum": ["fast", "slow", 3]},
                "tags": {"type": "array", "items": {"type": ["string", "null"]}},
                "pick": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/point"}]},
                "both": {"allOf": [{"$ref": "#/$defs/point"}, {"type": "object", "properties": {"z": {"type": "number"}}}]},
                "fixed": {"const": "yes"},
                "map": {"type": "object", "additionalProperties": {"type": "boolean"}}
            },
            "required": ["mode", "tags", "pick", "both", "fixed", "map"],
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}
        });
        let d = declaration(&[spec("t", s)]);
        for want in [
            "mode: \"fast\" | \"slow\" | 3;",
            "tags: (string | null)[];",
            "fixed: \"yes\";",
            "map: Record<string, boolean>;",
            "x: number;",
            "z?: number;",
        ] {
            assert!(d.contains(want), "{want} in\n{d}");
        }
        assert!(d.contains("pick: string | {"), "{d}");
        assert!(d.contains(" & {"), "{d}");
    }

    #[test]
    fn names_that_are_not_identifiers_are_quoted() {
        let s = json!({"type": "object", "properties": {"file-name": {"type": "string"}, "ok_1": {"type": "boolean"}}});
        let d = declaration(&[spec("read-file", s)]);
        assert!(d.contains("  \"read-file\"(args: {"), "{d}");
        assert!(d.contains("\"file-name\"?: string;"), "{d}");
        assert!(d.contains("ok_1?: boolean;"), "{d}");
        assert!(is_identifier("$x") && !is_identifier("1x") && !is_identifier(""));
    }

    #[test]
    fn a_description_cannot_end_its_comment_early() {
        let mut t = spec("x", json!({}));
        t.description = Some("evil */ declare const y: 1; /*".into());
        let d = declaration(&[t]);
        assert!(!d.contains("evil */"), "{d}");
        assert_eq!(d.matches("*/").count(), 1, "{d}");
    }

    #[test]
    fn cycles_and_deep_schemas_stay_bounded() {
        let cyclic = json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "object", "properties": {"next": {"$ref": "#/$defs/a"}}}}});
        let d = declaration(&[spec("c", cyclic)]);
        assert!(d.contains("unknown"), "{d}");
        assert!(d.len() < 10_000, "{} bytes", d.len());
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "array", "items": deep});
        }
        let d = declaration(&[spec(
            "deep",
            json!({"type": "object", "properties": {"a": deep}}),
        )]);
        assert!(d.len() < 1_000, "{} bytes", d.len());
        assert!(d.contains("unknown"));
    }

    #[test]
    fn several_servers_nest_under_their_names() {
        let d = declaration_by_server(&[
            (
                "git".into(),
                vec![spec("status", json!({"type": "object"}))],
            ),
            (
                "web-search".into(),
                vec![spec(
                    "search",
                    json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
                )],
            ),
        ]);
        assert!(
            d.contains(
                "  git: {\n    status(args: Record<string, unknown>): Promise<unknown>;\n  };"
            ),
            "{d}"
        );
        assert!(d.contains("  \"web-search\": {\n    search(args: {\n      q: string;\n    }): Promise<unknown>;\n  };"), "{d}");
    }
}
