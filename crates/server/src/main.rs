//! The `dialtone` binary.

use std::sync::Arc;

use clap::Parser;
use dialtone::cli::{
    AccountCommand, Cli, Command, CreditCommand, InventoryCommand, KeyCommand, RatesCommand,
    SenderCommand,
};
use dialtone::config::{Config, LogFormat};
use dialtone::operator::AccountView;
use dialtone::provisioning::{self, AccountRequest};
use dialtone::{Application, app, bootstrap};
use dialtone_domain::account::BillingMode;
use dialtone_domain::{Money, Sid, SystemClock};
use dialtone_store::accounts;

/// mimalloc instead of the C library's malloc for the server's own allocations: each
/// request allocates and frees many small buffers across threads (headers, JSON, rows),
/// where glibc's arenas spent a sixth of the server's CPU (`malloc`, `free`,
/// `malloc_consolidate` in the profile of the runs benchmark). Its two options that keep
/// memory resident are off: eager commit of its arenas at build time (`.cargo/config.toml`,
/// since the first arena exists before `main`), the purge delay here
/// ([`return_freed_memory_at_once`]); docs/decisions.md, "The server process".
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its `mimalloc.h`, version 3; the Rust bindings name
/// no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Has mimalloc give memory it no longer uses back to the system at once, not a second
/// later: the idle RSS after a load is then that of before it (45 MB against 54 MB, and
/// 68 MB with the C library's malloc; docs/benchmarks.md). `MIMALLOC_PURGE_DELAY` in the
/// environment still decides.
fn return_freed_memory_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options; callable at any time, from any thread.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A log reader that went away (a closed pipe) must not stop the server: tracing's own
    // report of the failed write would panic on the same closed stderr.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

fn main() -> std::process::ExitCode {
    return_freed_memory_at_once();
    let cli = Cli::parse();
    // The audio converter's child process: synchronous, no runtime, no configuration.
    if let Some(Command::ConvertAudio(args)) = &cli.command {
        return dialtone::operator::run_converter_child(args);
    }
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run(cli)),
        Err(e) => {
            eprintln!("dialtone: cannot start the runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> std::process::ExitCode {
    let config = match cli.settings.resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dialtone: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    init_logging(config.log_format);
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(config).await,
        Command::Migrate => app::open_store(&config)
            .await
            .map(|_| println!("migrations applied")),
        Command::Account(cmd) => account(config, cmd).await,
        Command::Key(cmd) => key(config, cmd).await,
        Command::Inventory(cmd) => inventory(config, cmd).await,
        Command::Rates(cmd) => rates(config, cmd).await,
        Command::Sender(cmd) => sender(config, cmd).await,
        Command::Credit(cmd) => credit(config, cmd).await,
        Command::ConvertAudio(_) => Ok(()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dialtone: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let dev_account = config.dev_account;
    let app = Application::build(config, Arc::new(SystemClock)).await?;
    // The numbering plan loads once the server is ready, not in the way of its start.
    let _ = std::thread::Builder::new()
        .name("numbering-plan".into())
        .spawn(dialtone_domain::E164::warm_up);
    let addr = app.local_addr();
    let https = app.https().map(|(addr, identity)| {
        tracing::info!(
            %addr,
            certificate = %identity.cert_path.display(),
            sha256 = %identity.fingerprint,
            self_signed = identity.self_signed,
            "serving HTTPS"
        );
        bootstrap::Https {
            url: format!("https://{addr}"),
            certificate: identity.cert_path.display().to_string(),
            fingerprint: identity.fingerprint.clone(),
            self_signed: identity.self_signed,
        }
    });
    // Decided before serving (an account made through /admin at once does not change it);
    // made while serving.
    let state = app.state().clone();
    if dev_account && state.store.read(dialtone_store::accounts::is_empty).await? {
        tokio::spawn(async move {
            match bootstrap::create_dev_account(&state).await {
                Ok(Some(made)) => {
                    let link = bootstrap::console_link(&state, &made)
                        .await
                        .inspect_err(
                            |e| tracing::warn!(error = %format!("{e:#}"), "no console link"),
                        )
                        .ok();
                    println!(
                        "{}",
                        bootstrap::announcement(
                            &made,
                            &format!("http://{addr}"),
                            https.as_ref(),
                            link.as_deref()
                        )
                    );
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "could not create the dev account")
                }
            }
        });
    }
    tracing::info!(%addr, "dialtone listening");
    app.run_until(shutdown_signal()).await
}

fn parse_sid(text: &str) -> anyhow::Result<Sid> {
    Sid::parse(text).ok_or_else(|| anyhow::anyhow!("{text:?} is not an account SID"))
}

async fn account(config: Config, cmd: AccountCommand) -> anyhow::Result<()> {
    let store = app::open_store(&config).await?;
    let clock = SystemClock;
    match cmd {
        AccountCommand::Create {
            name,
            parent,
            credit,
            currency,
            json,
        } => {
            let credit = credit
                .map(|c| Money::parse_cents(&c))
                .transpose()
                .map_err(|e| anyhow::anyhow!("--credit {e}"))?
                .unwrap_or(Money::ZERO);
            let request = AccountRequest {
                name,
                parent: parent.as_deref().map(parse_sid).transpose()?,
                credit,
                currency,
                login: None,
                billing_mode: BillingMode::Prepaid,
                levels: (config.credit_warning, config.credit_shutdown),
            };
            let made = provisioning::create_account(&store, &clock, request).await?;
            if json {
                let mut v = serde_json::to_value(AccountView::of(&made.account))?;
                v["password"] = made.password.clone().into();
                v["apiKey"] = made.api_key.clone().into();
                println!("{v}");
            } else {
                println!(
                    "account {} created\n  login    {}\n  password {}\n  API key  {}\n(the password and key are shown only now)",
                    made.account.sid, made.account.login, made.password, made.api_key
                );
            }
        }
        AccountCommand::List { json } => {
            let all = store.read(accounts::list).await?;
            if json {
                let views: Vec<AccountView> = all.iter().map(AccountView::of).collect();
                println!("{}", serde_json::to_string_pretty(&views)?);
            } else {
                println!(
                    "{:<9} {:<9} {:<10} {:>16} {:<4} name",
                    "sid", "parent", "status", "credit", "cur"
                );
                for a in all {
                    let parent = a
                        .parent_sid
                        .as_ref()
                        .map_or("-".to_owned(), ToString::to_string);
                    println!(
                        "{:<9} {:<9} {:<10} {:>16} {:<4} {}",
                        a.sid, parent, a.status, a.credit, a.currency, a.name
                    );
                }
            }
        }
    }
    Ok(())
}

async fn key(config: Config, cmd: KeyCommand) -> anyhow::Result<()> {
    let store = app::open_store(&config).await?;
    let clock = SystemClock;
    match cmd {
        KeyCommand::Create { account } => {
            let key = provisioning::create_key(&store, &clock, parse_sid(&account)?).await?;
            println!("{key}\n(shown only now)");
        }
        KeyCommand::Revoke { account, key } => {
            if provisioning::revoke_key(&store, &clock, parse_sid(&account)?, key.clone()).await? {
                println!("key {key} revoked");
            } else {
                anyhow::bail!("no live key {key} on account {account}");
            }
        }
    }
    Ok(())
}

async fn inventory(config: Config, cmd: InventoryCommand) -> anyhow::Result<()> {
    let store = app::open_store(&config).await?;
    match cmd {
        InventoryCommand::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let ranges = dialtone::operator::parse_inventory(&text).map_err(|errors| {
                let lines: Vec<String> = errors
                    .iter()
                    .map(|e| format!("line {}: {}", e.line, e.message))
                    .collect();
                anyhow::anyhow!(
                    "{} refused, nothing imported:\n{}",
                    file.display(),
                    lines.join("\n")
                )
            })?;
            let count = dialtone::operator::import_inventory(&store, ranges).await?;
            println!(
                "{} numbers added, {} already in the inventory",
                count.added, count.skipped
            );
        }
    }
    Ok(())
}

async fn rates(config: Config, cmd: RatesCommand) -> anyhow::Result<()> {
    let store = app::open_store(&config).await?;
    match cmd {
        RatesCommand::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let list = dialtone::operator::parse_rates(&text).map_err(|errors| {
                let lines: Vec<String> = errors
                    .iter()
                    .map(|e| format!("line {}: {}", e.line, e.message))
                    .collect();
                anyhow::anyhow!(
                    "{} refused, nothing imported:\n{}",
                    file.display(),
                    lines.join("\n")
                )
            })?;
            let n = dialtone::operator::import_rates(&store, list).await?;
            println!("{n} rates imported");
        }
    }
    Ok(())
}

async fn sender(config: Config, cmd: SenderCommand) -> anyhow::Result<()> {
    let store = app::open_store(&config).await?;
    match cmd {
        SenderCommand::Approve { account, sender } => {
            let Ok(dialtone_domain::sms::Sender::Alphanumeric(name)) =
                dialtone_domain::sms::Sender::parse(&sender)
            else {
                anyhow::bail!(
                    "--sender must be 1 to 11 letters, digits, spaces, dashes or underscores with at least one letter"
                );
            };
            let sid = parse_sid(&account)?;
            let now = dialtone_domain::Clock::now(&SystemClock);
            store
                .write(move |c| {
                    let a = accounts::by_sid(c, &sid)?
                        .ok_or_else(|| anyhow::anyhow!("no account {sid}"))?;
                    dialtone_store::sms::approve_sender(c, a.id, &name, now)?;
                    Ok::<_, anyhow::Error>(())
                })
                .await?;
            println!("sender {sender:?} approved for {account}");
        }
    }
    Ok(())
}

async fn credit(config: Config, cmd: CreditCommand) -> anyhow::Result<()> {
    let store = app::open_store(&config).await?;
    match cmd {
        CreditCommand::Add { account, amount } => {
            let sid = parse_sid(&account)?;
            let amount =
                Money::parse_cents(&amount).map_err(|e| anyhow::anyhow!("--amount {e}"))?;
            if amount <= Money::ZERO {
                anyhow::bail!("--amount must be positive");
            }
            let now = dialtone_domain::Clock::now(&SystemClock);
            let balance = store
                .write(move |c| {
                    let a = accounts::by_sid(c, &sid)?
                        .ok_or_else(|| anyhow::anyhow!("no account {sid}"))?;
                    dialtone_store::accounts::lock(c, a.id)?;
                    dialtone_store::billing::top_up(c, a.id, amount, "operator top-up", now)?
                        .ok_or_else(|| anyhow::anyhow!("the balance cannot hold this amount"))
                })
                .await?;
            println!("credit of {account} is now {balance} cents");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// mimalloc's `mi_option_arena_eager_commit` (`mimalloc.h`, version 3).
    const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

    /// The option numbers name what they are meant to (a new mimalloc could renumber
    /// them), and the build turned the eager commit of arenas off.
    #[test]
    fn the_allocator_is_built_and_tuned_as_meant() {
        // SAFETY: reads mimalloc's options; callable at any time, from any thread.
        let (purge_delay, eager_commit) = unsafe {
            (
                libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY),
                libmimalloc_sys::mi_option_get(MI_OPTION_ARENA_EAGER_COMMIT),
            )
        };
        assert_eq!(purge_delay, 1_000, "mimalloc's default purge delay, in ms");
        assert_eq!(
            eager_commit, 0,
            "MI_DEFAULT_ARENA_EAGER_COMMIT=0 from .cargo/config.toml (a CFLAGS of your own replaces it)"
        );
    }
}
