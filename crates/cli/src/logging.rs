//! The daemon's and the tools' log lines on stderr. Every field value is passed through
//! [`linux::text::escape_control`] before it is written, so text that came from a process
//! (its name, its command line), a file or the command line can never start a line of its
//! own or carry terminal escapes: one event is always one line.

use std::fmt;

use tracing::field::Field;
use tracing_subscriber::field::MakeExt as _;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FormatFields, MakeWriter};

/// Formats fields as `message key=value ...`, escaping control characters in each value.
pub fn escaping_fields() -> impl for<'w> FormatFields<'w> + Send + Sync + 'static {
    tracing_subscriber::fmt::format::debug_fn(
        |w: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug| {
            // A message is text as written; any other value is in its Debug form, which has
            // escaped its own backslashes and quotes already.
            let text = format!("{value:?}");
            if field.name() == "message" {
                write!(w, "{}", linux::text::escape_control(&text))
            } else {
                let clean = linux::text::escape_control_in_debug(&text);
                write!(w, "{}={clean}", field.name())
            }
        },
    )
    .delimited(" ")
}

/// Installs the subscriber: `RUST_LOG` (e.g. `homenode=debug`) overrides the default `info`.
/// Lines are coloured only on a terminal and without a non-empty `NO_COLOR`.
pub fn init() {
    init_with(std::io::stderr, crate::progress::stderr_colour());
}

fn init_with<W>(writer: W, ansi: bool)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi)
        .with_target(false)
        .fmt_fields(escaping_fields())
        .try_init();
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    /// A writer that keeps what is logged, shared with the test.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_forged_process_name_stays_on_its_own_line() {
        let cap = Capture::default();
        let sink = cap.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .with_target(false)
            .fmt_fields(super::escaping_fields())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let comm = "x\nERROR forged";
            tracing::warn!("pid 42 ({comm}): left alone");
            tracing::info!(path = "/etc/a\r\nb", "read");
            tracing::info!(comm = "cat\u{202e}gpj.exe", "a\\nb");
        });
        let text = String::from_utf8(cap.0.lock().expect("lock").clone()).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].contains("pid 42 (x\\nERROR forged): left alone"),
            "{text}"
        );
        assert!(lines[1].contains(r#"read path="/etc/a\r\nb""#), "{text}");
        assert!(!text.lines().any(|l| l.starts_with("ERROR")), "{text}");
        // A literal backslash-n in a message is told from a line feed, and a bidi override
        // in a value is shown, not obeyed.
        assert!(
            lines[2].contains(r#"a\\nb comm="cat\u{202e}gpj.exe""#),
            "{text}"
        );
        assert!(!text.contains('\u{202e}'), "{text}");
    }
}
