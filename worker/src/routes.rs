//! Spin's HTTP routes, with the semantics host/src/routes.ts gives them: `/a/b` matches that
//! path only, `/a/...` matches `/a` and everything below it, `/...` matches every path. An
//! exact route wins over a wildcard, a longer wildcard prefix over a shorter one. `:name`
//! segments are not supported: the control plane generates none.

const WILDCARD: &str = "/...";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMatch {
    pub component: String,
    pub route: String,
    /// The route without its `/...`: Spin's spin-component-route.
    pub base: String,
    /// The part of the path below the route: Spin's spin-path-info.
    pub path_info: String,
}

#[derive(Debug)]
struct Entry {
    route: String,
    component: String,
    wildcard: bool,
    prefix: String,
}

/// A route the worker cannot match, refused at `load`.
#[derive(Debug, thiserror::Error)]
#[error("route {0:?} does not start with /")]
pub struct BadRoute(String);

#[derive(Debug, Default)]
pub struct Router {
    entries: Vec<Entry>,
}

impl Router {
    /// `routes` are (route, component id) pairs from the lock's http triggers.
    pub fn new(routes: &[(String, String)]) -> Result<Self, BadRoute> {
        let mut entries = Vec::with_capacity(routes.len());
        for (route, component) in routes {
            if !route.starts_with('/') {
                return Err(BadRoute(route.clone()));
            }
            let wildcard = route.ends_with(WILDCARD);
            let bare = if wildcard {
                &route[..route.len() - WILDCARD.len()]
            } else {
                route.as_str()
            };
            entries.push(Entry {
                route: route.clone(),
                component: component.clone(),
                wildcard,
                prefix: trim_slash(bare).to_string(),
            });
        }
        // Exact routes first, then wildcards from the longest prefix down; the sort is
        // stable, so equal routes keep the lock's order as Spin's does.
        entries.sort_by(|a, b| {
            a.wildcard
                .cmp(&b.wildcard)
                .then(b.prefix.len().cmp(&a.prefix.len()))
        });
        Ok(Router { entries })
    }

    pub fn find(&self, raw_path: &str) -> Option<RouteMatch> {
        let path = trim_slash(raw_path);
        for entry in &self.entries {
            let found = if entry.wildcard {
                entry.prefix.is_empty()
                    || path == entry.prefix
                    || path
                        .strip_prefix(entry.prefix.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            } else {
                path == entry.prefix
            };
            if found {
                let path_info = if entry.wildcard {
                    raw_path[entry.prefix.len()..].to_string()
                } else {
                    String::new()
                };
                return Some(RouteMatch {
                    component: entry.component.clone(),
                    route: entry.route.clone(),
                    base: entry.prefix.clone(),
                    path_info,
                });
            }
        }
        None
    }
}

/// "/a/" and "/a" are the same route; "/" is the empty prefix.
fn trim_slash(path: &str) -> &str {
    path.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(routes: &[(&str, &str)]) -> Router {
        let owned: Vec<_> = routes
            .iter()
            .map(|(r, c)| (r.to_string(), c.to_string()))
            .collect();
        Router::new(&owned).unwrap()
    }

    #[test]
    fn exact_wins_over_wildcard_and_longest_prefix_first() {
        let r = router(&[
            ("/...", "all"),
            ("/api/...", "api"),
            ("/api/exact", "exact"),
        ]);
        assert_eq!(r.find("/api/exact").unwrap().component, "exact");
        assert_eq!(r.find("/api/exact/").unwrap().component, "exact");
        let api = r.find("/api/users/1").unwrap();
        assert_eq!(api.component, "api");
        assert_eq!(api.base, "/api");
        assert_eq!(api.path_info, "/users/1");
        assert_eq!(r.find("/api").unwrap().path_info, "");
        assert_eq!(r.find("/apiary").unwrap().component, "all");
        let root = r.find("/").unwrap();
        assert_eq!((root.component.as_str(), root.base.as_str()), ("all", ""));
        assert_eq!(root.path_info, "/");
    }

    #[test]
    fn no_route_is_none_and_bad_route_is_refused() {
        let r = router(&[("/hello", "h")]);
        assert!(r.find("/hello/x").is_none());
        assert!(r.find("/").is_none());
        assert!(Router::new(&[("x".into(), "c".into())]).is_err());
    }
}
