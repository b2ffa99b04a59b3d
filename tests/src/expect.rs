//! The partial matcher fixture expectations are written in (tests/fixtures/README.md).
//!
//! An expectation is JSON compared with an actual JSON value:
//!
//! - a scalar (`null`, a boolean, a number, a string) must be equal;
//! - an object matches key by key for the keys it gives (other keys of the actual object are
//!   not looked at; a key it gives must be there);
//! - an array matches element by element and must have the same length;
//! - an object whose keys all start with `$` is a matcher; every one of its operators must
//!   hold:
//!   - `{"$len": N}`: the array or object has N elements (keys);
//!   - `{"$each": E}`: every element of the array (every value of the object) matches `E`;
//!   - `{"$contains": E}`: the string contains the string `E`, or some element of the array
//!     matches `E`;
//!   - `{"$eq": V}`: exactly `V` (every key, no partial match).
//!
//! ```
//! use fragstat_testkit::expect::check;
//! use serde_json::json;
//! let actual = json!({"name": "x", "players": [{"ping": 0, "score": 3}, {"ping": 0, "score": 5}]});
//! assert!(check(&json!({"players": {"$len": 2, "$each": {"ping": 0}}}), &actual).is_ok());
//! assert!(check(&json!({"players": [{"score": 3}, {"score": 5}]}), &actual).is_ok());
//! let errors = check(&json!({"name": "y", "players": {"$len": 3}}), &actual).unwrap_err();
//! assert_eq!(errors, [
//!     "$.name: expected \"y\", found \"x\"",
//!     "$.players: expected 3 elements, found 2",
//! ]);
//! ```

use serde_json::Value;

/// Compares `actual` with the expectation `expected`; on a mismatch, every difference found,
/// each starting with its path (`$.players[2].name_raw`).
pub fn check(expected: &Value, actual: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    walk("$", expected, actual, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// True when `v` is a matcher object (every key starts with `$`, at least one key).
fn is_matcher(v: &serde_json::Map<String, Value>) -> bool {
    !v.is_empty() && v.keys().all(|k| k.starts_with('$'))
}

/// A short form of a value for messages.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        let cut: String = s.chars().take(117).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn walk(path: &str, expected: &Value, actual: &Value, errors: &mut Vec<String>) {
    match expected {
        Value::Object(ops) if is_matcher(ops) => {
            for (op, arg) in ops {
                operator(path, op, arg, actual, errors);
            }
        }
        Value::Object(keys) => {
            if keys.keys().any(|k| k.starts_with('$')) {
                errors.push(format!(
                    "{path}: the expectation mixes `$` operators with keys"
                ));
                return;
            }
            let Value::Object(got) = actual else {
                errors.push(format!(
                    "{path}: expected an object, found {}",
                    short(actual)
                ));
                return;
            };
            for (k, want) in keys {
                let at = format!("{path}.{k}");
                match got.get(k) {
                    Some(v) => walk(&at, want, v, errors),
                    None => errors.push(format!("{at}: missing")),
                }
            }
        }
        Value::Array(items) => {
            let Value::Array(got) = actual else {
                errors.push(format!(
                    "{path}: expected an array, found {}",
                    short(actual)
                ));
                return;
            };
            if got.len() != items.len() {
                errors.push(format!(
                    "{path}: expected {} elements, found {}",
                    items.len(),
                    got.len()
                ));
            }
            for (i, (want, v)) in items.iter().zip(got).enumerate() {
                walk(&format!("{path}[{i}]"), want, v, errors);
            }
        }
        scalar => {
            if scalar != actual {
                errors.push(format!(
                    "{path}: expected {}, found {}",
                    short(scalar),
                    short(actual)
                ));
            }
        }
    }
}

fn operator(path: &str, op: &str, arg: &Value, actual: &Value, errors: &mut Vec<String>) {
    match op {
        "$len" => {
            let Some(want) = arg.as_u64() else {
                errors.push(format!("{path}: `$len` takes a count, not {}", short(arg)));
                return;
            };
            let got = match actual {
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                other => {
                    errors.push(format!(
                        "{path}: `$len` needs an array or an object, found {}",
                        kind(other)
                    ));
                    return;
                }
            };
            if got as u64 != want {
                errors.push(format!("{path}: expected {want} elements, found {got}"));
            }
        }
        "$each" => match actual {
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(&format!("{path}[{i}]"), arg, v, errors);
                }
            }
            Value::Object(o) => {
                for (k, v) in o {
                    walk(&format!("{path}.{k}"), arg, v, errors);
                }
            }
            other => errors.push(format!(
                "{path}: `$each` needs an array or an object, found {}",
                kind(other)
            )),
        },
        "$contains" => match (actual, arg) {
            (Value::String(s), Value::String(part)) => {
                if !s.contains(part.as_str()) {
                    errors.push(format!(
                        "{path}: expected a string containing {}, found {}",
                        short(arg),
                        short(actual)
                    ));
                }
            }
            (Value::Array(a), _) => {
                let found = a.iter().any(|v| {
                    let mut none = Vec::new();
                    walk(path, arg, v, &mut none);
                    none.is_empty()
                });
                if !found {
                    errors.push(format!(
                        "{path}: no element matches {}, found {}",
                        short(arg),
                        short(actual)
                    ));
                }
            }
            _ => errors.push(format!(
                "{path}: `$contains` needs a string (with a string argument) or an array, found {}",
                kind(actual)
            )),
        },
        "$eq" => {
            if arg != actual {
                errors.push(format!(
                    "{path}: expected exactly {}, found {}",
                    short(arg),
                    short(actual)
                ));
            }
        }
        other => errors.push(format!(
            "{path}: unknown operator `{other}` (known: $len, $each, $contains, $eq)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use serde_json::json;

    fn fails(expected: serde_json::Value, actual: serde_json::Value) -> Vec<String> {
        check(&expected, &actual).expect_err("must not match")
    }

    #[test]
    fn objects_match_the_keys_given() {
        let actual = json!({"a": 1, "b": {"c": "x", "d": null}});
        assert!(check(&json!({"b": {"d": null}}), &actual).is_ok());
        assert_eq!(
            fails(json!({"b": {"e": 1}}), actual.clone()),
            ["$.b.e: missing"]
        );
        assert_eq!(
            fails(json!({"a": "1"}), actual.clone()),
            ["$.a: expected \"1\", found 1"]
        );
        assert_eq!(
            fails(json!({"a": {"x": 1}}), actual),
            ["$.a: expected an object, found 1"]
        );
    }

    #[test]
    fn arrays_match_element_wise_with_their_length() {
        let actual = json!([{"n": 1, "m": 0}, {"n": 2}]);
        assert!(check(&json!([{"n": 1}, {"n": 2}]), &actual).is_ok());
        assert_eq!(
            fails(json!([{"n": 1}]), actual.clone()),
            ["$: expected 1 elements, found 2"]
        );
        assert_eq!(
            fails(json!([{"n": 1}, {"n": 3}]), actual),
            ["$[1].n: expected 3, found 2"]
        );
        assert_eq!(
            fails(json!([]), json!({})),
            ["$: expected an array, found {}"]
        );
    }

    #[test]
    fn operators() {
        let actual = json!({"p": [{"s": null, "q": 1}, {"s": null, "q": 2}], "w": ["skipped line at 3: \"abc\""]});
        assert!(check(&json!({"p": {"$len": 2, "$each": {"s": null}}}), &actual).is_ok());
        assert!(check(&json!({"w": {"$each": {"$contains": "abc"}}}), &actual).is_ok());
        assert!(check(&json!({"p": {"$contains": {"q": 2}}}), &actual).is_ok());
        assert!(check(&json!({"p": {"$len": 2}, "w": {"$len": 1}}), &actual).is_ok());
        assert_eq!(
            fails(json!({"p": {"$each": {"q": 1}}}), actual.clone()),
            ["$.p[1].q: expected 1, found 2"]
        );
        let e = fails(json!({"p": {"$contains": {"q": 3}}}), actual.clone());
        assert!(
            e.len() == 1 && e[0].starts_with("$.p: no element matches {\"q\":3}"),
            "{e:?}"
        );
        assert_eq!(
            fails(json!({"w": [{"$contains": "xyz"}]}), actual.clone()).len(),
            1
        );
        assert_eq!(
            fails(
                json!({"p": [{"$eq": {"s": null}}, {"s": null}]}),
                actual.clone()
            )
            .len(),
            1,
            "$eq is not partial"
        );
        assert!(check(
            &json!({"p": [{"$eq": {"s": null, "q": 1}}, {"q": 2}]}),
            &actual
        )
        .is_ok());
        assert_eq!(
            fails(json!({"p": {"$size": 2}}), actual.clone()),
            ["$.p: unknown operator `$size` (known: $len, $each, $contains, $eq)"]
        );
        assert_eq!(
            fails(json!({"p": {"$len": 2, "x": 1}}), actual.clone()),
            ["$.p: the expectation mixes `$` operators with keys"]
        );
        assert_eq!(fails(json!({"w": {"$len": "1"}}), actual).len(), 1);
    }
}
