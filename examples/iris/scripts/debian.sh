# Sourced by the measurement scripts: `debian_install TOOL[=PACKAGE] ...` installs, from Debian,
# each tool that is not on the PATH (with sudo unless running as root), in one apt-get run.
# `TOOL=PACKAGE` names the package when it differs from the tool (`nginx=nginx-light`).
debian_install() {
    local missing=() spec tool
    for spec in "$@"; do
        tool=${spec%%=*}
        command -v "$tool" >/dev/null 2>&1 || missing+=("${spec#*=}")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo_if_needed=""
    if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=sudo; fi
    echo "installing ${missing[*]} from Debian"
    $sudo_if_needed apt-get update -qq
    $sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
