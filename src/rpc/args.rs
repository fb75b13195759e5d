//! Command line of `laya serve`: which model, which backend, how much logging.

use super::log::Level;
use crate::engine::Tuning;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub struct ServeArgs {
    pub model: Option<PathBuf>,
    pub backend: String,
    pub log_level: Level,
    /// Ranking constants ("key=value,..."; see `engine::Tuning`).
    pub tuning: Tuning,
    /// `--version`: print the version and exit (used by :checkhealth).
    pub version: bool,
}

pub const USAGE: &str = "usage: laya serve [--model PATH] [--backend auto|cpu|mlx] \
[--log-level error|warn|info|debug] [--tune key=value,...] [--version]";

impl ServeArgs {
    pub fn parse(args: &[String]) -> Result<ServeArgs, String> {
        let mut out = ServeArgs {
            model: None,
            backend: "auto".to_string(),
            log_level: Level::Info,
            tuning: Tuning::default(),
            version: false,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            // Accept both `--flag value` and `--flag=value`.
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = |name: &str| -> Result<String, String> {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("{name} needs a value; {USAGE}"))
            };
            match flag {
                "--model" => out.model = Some(PathBuf::from(value("--model")?)),
                "--backend" => {
                    let b = value("--backend")?;
                    if !matches!(b.as_str(), "auto" | "cpu" | "mlx") {
                        return Err(format!("--backend {b}: expected auto, cpu or mlx"));
                    }
                    out.backend = b;
                }
                "--log-level" => {
                    let l = value("--log-level")?;
                    out.log_level = Level::parse(&l).ok_or_else(|| {
                        format!("--log-level {l}: expected error, warn, info or debug")
                    })?;
                }
                "--tune" => {
                    let t = value("--tune")?;
                    out.tuning.set(&t).map_err(|e| format!("--tune {t}: {e}"))?;
                }
                "--version" | "-V" => out.version = true,
                other => return Err(format!("unknown argument `{other}`; {USAGE}")),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<ServeArgs, String> {
        ServeArgs::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_and_flags() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.backend, "auto");
        assert_eq!(a.model, None);
        let a = parse(&[
            "--model",
            "m.safetensors",
            "--backend=cpu",
            "--log-level",
            "debug",
        ])
        .unwrap();
        assert_eq!(a.model, Some(PathBuf::from("m.safetensors")));
        assert_eq!(a.backend, "cpu");
        assert_eq!(a.log_level, Level::Debug);
        let a = parse(&["--tune=typed_past=0"]).unwrap();
        assert_eq!(a.tuning.typed_past, 0.0);
        assert_eq!(parse(&[]).unwrap().tuning.typed_past, 2.0);
    }

    #[test]
    fn bad_flags_are_errors_that_say_what_to_do() {
        assert!(parse(&["--backend", "gpu"])
            .unwrap_err()
            .contains("auto, cpu or mlx"));
        assert!(parse(&["--model"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--frobnicate"]).unwrap_err().contains("usage"));
        assert!(parse(&["--tune", "typed_thru=0"])
            .unwrap_err()
            .contains("unknown tuning key"));
    }
}
