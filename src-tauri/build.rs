fn main() {
    // The window's terminal is xterm.js from npm, copied into ui/vendor by `make ui-vendor`; a window
    // built without it would have no terminal.
    println!("cargo:rerun-if-changed=../ui/vendor");
    for file in ["xterm.js", "xterm.css", "addon-fit.js"] {
        let path = std::path::Path::new("../ui/vendor").join(file);
        if !path.exists() {
            eprintln!(
                "error: ui/vendor/{file} is missing: run `make ui-vendor` (it copies the pinned xterm.js from npm)"
            );
            std::process::exit(1);
        }
    }
    tauri_build::build();
}
