//! `nightshift push setup`: answers from the phone, set up once. It makes the topic pair and the
//! install's signing key (see `nightshift::push::set_up_phone`) and shows, as a QR code, the
//! topic the ntfy app subscribes to.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Make the topics the phone reads and answers on, and the key that signs its buttons; then
    /// show what the ntfy app subscribes to. Run again, it shows the same without changing them.
    Setup {
        /// The ntfy server [default: push.ntfy's server, else https://ntfy.sh]
        #[arg(long, value_name = "URL")]
        server: Option<String>,
        /// Make new topics and a new key: every button pushed before stops working
        #[arg(long)]
        fresh: bool,
        /// No QR code, only the lines
        #[arg(long)]
        no_qr: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Action::Setup { server, fresh, no_qr } = args.action;
    let dir = nightshift::paths::Paths::config_dir()
        .ok_or_else(|| anyhow::anyhow!("no configuration directory: set XDG_CONFIG_HOME or HOME"))?;
    let phone = nightshift::push::set_up_phone(&dir, server.as_deref(), fresh).map_err(anyhow::Error::msg)?;
    let key = match phone.key {
        nightshift::push::Kept::Keyring => "in the desktop's keyring".to_string(),
        nightshift::push::Kept::File => {
            format!("{} (readable by you alone)", dir.join(nightshift::push::PHONE_KEY_FILE).display())
        }
    };
    if phone.made {
        println!("The phone's answers are set up.");
    } else {
        println!("The phone's answers were set up already (`--fresh` makes new topics and a new key).");
    }
    println!("  the phone subscribes to:  {}", phone.publish);
    println!("  its buttons answer on:    {} (nobody subscribes to it)", phone.listen);
    println!("  the key that signs them:  {key}");
    if !no_qr {
        println!("\nIn the ntfy app, subscribe to the topic: scan this, or add it by hand.\n");
        println!("{}", nightshift::push::qr_text(&phone.publish).map_err(anyhow::Error::msg)?);
    }
    let server = nightshift::notice::server(&phone.publish);
    if server != "https://ntfy.sh" {
        println!(
            "A server with access control: the phone's buttons post without a login, so let everyone \
             write (only) to the answers' topic, e.g. `ntfy access everyone {} write-only`.",
            phone.listen.rsplit('/').next().unwrap_or_default()
        );
    }
    println!("Sessions started from now on push with buttons; ones already running keep their pushes as they are.");
    Ok(ExitCode::SUCCESS)
}
