//! The command line componentize-js gives its pre-initializer (wizer's, the part it uses):
//! `--allow-wasi --init-func NAME --dir=DIR --mapdir=GUEST::HOST --wasm-bulk-memory=true
//! --inherit-env=true -o=OUT IN`. A flag takes its value after `=` or as the next argument;
//! anything else is refused, so a componentize-js that starts passing another flag fails its
//! build with that flag's name rather than building something else.

use std::path::PathBuf;

#[derive(Debug, PartialEq)]
pub struct Args {
    pub init_func: String,
    pub allow_wasi: bool,
    pub inherit_env: bool,
    /// Host directories, each seen by the guest under its own path.
    pub dirs: Vec<PathBuf>,
    /// (guest path, host directory).
    pub map_dirs: Vec<(String, PathBuf)>,
    pub output: PathBuf,
    pub input: PathBuf,
}

fn boolean(flag: &str, value: Option<String>) -> Result<bool, String> {
    match value.as_deref() {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(format!("{flag} takes true or false, not {other:?}")),
    }
}

pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut args = args.into_iter();
    let mut init_func = "wizer-initialize".to_string();
    let (mut allow_wasi, mut inherit_env) = (false, false);
    let (mut dirs, mut map_dirs) = (Vec::new(), Vec::new());
    let (mut output, mut input) = (None, None);
    while let Some(arg) = args.next() {
        if !arg.starts_with('-') {
            if input.replace(PathBuf::from(&arg)).is_some() {
                return Err(format!("more than one input module ({arg})"));
            }
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--allow-wasi" => allow_wasi = boolean(&flag, inline.clone())?,
            "--inherit-env" => inherit_env = boolean(&flag, inline.clone())?,
            // Bulk memory is always on (wasmtime's default); only "on" is accepted.
            "--wasm-bulk-memory" => {
                if !boolean(&flag, inline.clone())? {
                    return Err("--wasm-bulk-memory=false is not supported".into());
                }
            }
            "--init-func" | "-f" => init_func = value("--init-func")?,
            "--dir" => dirs.push(PathBuf::from(value("--dir")?)),
            "--mapdir" => {
                let spec = value("--mapdir")?;
                let (guest, host) = spec
                    .split_once("::")
                    .ok_or_else(|| format!("--mapdir takes GUEST::HOST, not {spec:?}"))?;
                map_dirs.push((guest.to_string(), PathBuf::from(host)));
            }
            "-o" | "--output" => output = Some(PathBuf::from(value("-o")?)),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(Args {
        init_func,
        allow_wasi,
        inherit_env,
        dirs,
        map_dirs,
        output: output.ok_or("no output (-o)")?,
        input: input.ok_or("no input module")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Result<Args, String> {
        parse(line.split(' ').map(String::from))
    }

    #[test]
    fn reads_componentize_js_line() {
        let args = parsed(
            "--allow-wasi --init-func componentize.wizer --dir=/w/sources --mapdir=/::/app \
             --wasm-bulk-memory=true --inherit-env=true -o=/w/out.wasm /w/in.wasm",
        )
        .unwrap();
        assert_eq!(
            args,
            Args {
                init_func: "componentize.wizer".into(),
                allow_wasi: true,
                inherit_env: true,
                dirs: vec!["/w/sources".into()],
                map_dirs: vec![("/".into(), "/app".into())],
                output: "/w/out.wasm".into(),
                input: "/w/in.wasm".into(),
            }
        );
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert_eq!(
            parsed("--preload=x=y -o=o i").unwrap_err(),
            "unknown flag --preload"
        );
        assert_eq!(
            parsed("--inherit-env=yes -o=o i").unwrap_err(),
            "--inherit-env takes true or false, not \"yes\""
        );
        assert_eq!(
            parsed("--mapdir=/app -o=o i").unwrap_err(),
            "--mapdir takes GUEST::HOST, not \"/app\""
        );
        assert_eq!(
            parsed("-o=o a b").unwrap_err(),
            "more than one input module (b)"
        );
        assert_eq!(parsed("i").unwrap_err(), "no output (-o)");
        assert_eq!(parsed("-o").unwrap_err(), "-o needs a value");
    }
}
