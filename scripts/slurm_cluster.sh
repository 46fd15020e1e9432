#!/usr/bin/env bash
# A one-node SLURM cluster on this machine: the way to try `--engine slurm` without a cluster, and what CI
# runs the SLURM engine on (scripts/slurm_ci.sh). Debian's packages (22.05), daemons started directly
# (no systemd needed), every file they write under one directory.
#
#   sudo bash scripts/slurm_cluster.sh up                  # install what is missing, start; accounting on
#   sudo bash scripts/slurm_cluster.sh up --no-accounting  # without slurmdbd and its database (no sacct)
#   export SLURM_CONF=/tmp/electra-bench-slurm/etc/slurm.conf   # `up` prints this line: sbatch, squeue, ...
#   sudo bash scripts/slurm_cluster.sh down                # cancel its jobs, stop the daemons (data kept)
#   bash scripts/slurm_cluster.sh status
#
# `up` and `down` are idempotent: `up` on a running cluster does nothing (or restarts it when the
# accounting choice changed), `down` on a stopped one says so. Daemons are found by their PID files only.
# Settings (environment): EB_SLURM_DIR, where config, state, logs and PID files go [/tmp/electra-bench-slurm];
# EB_SLURM_DB_PORT, the accounting database's TCP port on 127.0.0.1 [6820]. The slurm ports are SLURM's
# defaults (6817 slurmctld, 6818 slurmd, 6819 slurmdbd). Needs root: the packages, and slurmd starts jobs.
set -euo pipefail

DIR="${EB_SLURM_DIR:-/tmp/electra-bench-slurm}"
DB_PORT="${EB_SLURM_DB_PORT:-6820}"
CONF="$DIR/etc/slurm.conf"
PACKAGES=(slurmctld slurmd slurm-client munge)
DB_PACKAGES=(slurmdbd mariadb-server)
# start order; `down` stops them the other way round
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

die() { echo "error: $*" >&2; exit 1; }
say() { echo "slurm_cluster: $*"; }
pid_of() { [ -f "$DIR/run/$1.pid" ] && cat "$DIR/run/$1.pid" 2>/dev/null || true; }
alive() { local pid; pid=$(pid_of "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# wait_for DAEMON WHAT LOG CMD...: poll CMD until it succeeds; fail naming the daemon's log when the
# daemon exits or after 60 s
wait_for() {
    local daemon="$1" what="$2" log="$3"; shift 3
    local deadline=$((SECONDS + 60))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if timeout 10 "$@" >/dev/null 2>&1; then return 0; fi
        alive "$daemon" || die "$daemon exited while starting; its log: $log (last line: $(tail -n 1 "$log" 2>/dev/null || echo none))"
        sleep 0.2
    done
    die "$what did not come up within 60 s; its log: $log (last line: $(tail -n 1 "$log" 2>/dev/null || echo none))"
}

install_missing() {
    local want=("${PACKAGES[@]}") missing=() p
    [ "$1" = yes ] && want+=("${DB_PACKAGES[@]}")
    for p in "${want[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get here: install SLURM 22.05+ (and munge$([ "$1" = yes ] && echo ', slurmdbd, mariadb') ) yourself"
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]}: run this as root (sudo) so that apt-get can install them"
    local t0; t0=$(now)
    say "installing ${missing[*]} (apt-get)"
    # policy-rc.d-less machines would start the packaged services; ours are started below, by hand
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${missing[@]}" >"$DIR/log/apt.log" 2>&1 || {
        apt-get update -q >>"$DIR/log/apt.log" 2>&1 &&
        apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$DIR/log/apt.log" 2>&1
    } || die "apt-get could not install ${missing[*]}; see $DIR/log/apt.log"
    say "installed in $(elapsed "$t0") s"
}

write_config() {
    local accounting="$1" node slurmd_c gpus gres=""
    node=$(hostname -s)
    # the node as slurmd sees it (CPUs, sockets, cores, memory), with a little memory held back: a node
    # configured with more memory than it has is drained
    slurmd_c=$(slurmd -C | head -n 1)
    local mem; mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$slurmd_c")
    slurmd_c=$(sed "s/RealMemory=[0-9]*/RealMemory=$((mem * 95 / 100))/" <<<"$slurmd_c")
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    : >"$DIR/etc/gres.conf"
    if [ "${gpus:-0}" -gt 0 ]; then
        gres=" Gres=gpu:$gpus"
        for ((i = 0; i < gpus; i++)); do echo "NodeName=$node Name=gpu File=/dev/nvidia$i" >>"$DIR/etc/gres.conf"; done
    fi
    cat >"$CONF" <<EOF
# written by scripts/slurm_cluster.sh: a one-node cluster (accounting: $accounting)
ClusterName=electrabench
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/run/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/d
SlurmctldPidFile=$DIR/run/slurmctld.daemon.pid
SlurmdPidFile=$DIR/run/slurmd.daemon.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# a job runs at its submitter's nice value: a niced driver's jobs stay niced
PropagatePrioProcess=1
MailProg=/bin/true
ReturnToService=2
# GPU requests are understood (and refused on a node without GPUs, as on a real cluster's CPU partition)
GresTypes=gpu
EOF
    if [ "$accounting" = yes ]; then
        cat >>"$CONF" <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
# the persistent connection to slurmdbd authenticates through the munge socket named here (not AuthInfo's)
AccountingStoragePass=$DIR/run/munge.socket
JobAcctGatherType=jobacct_gather/none
EOF
        # slurmdbd insists on a file only its user can read (it holds the database password)
        (umask 077 && cat >"$DIR/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$DIR/run/munge.socket
DbdHost=$node
DbdAddr=127.0.0.1
SlurmUser=root
PidFile=$DIR/run/slurmdbd.daemon.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
        )
    else
        echo "AccountingStorageType=accounting_storage/none" >>"$CONF"
    fi
    cat >>"$CONF" <<EOF
$slurmd_c$gres
PartitionName=debug Nodes=$node Default=YES MaxTime=1-00:00:00 State=UP
EOF
}

# start NAME CMD...: run a daemon in the foreground mode of its own, in the background, its PID in run/
start() {
    local name="$1"; shift
    setsid "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
    echo $! >"$DIR/run/$name.pid"
}

start_db() {
    local data="$DIR/state/mariadb" sock="$DIR/run/mariadb.socket"
    if [ ! -d "$data/mysql" ]; then
        mkdir -p "$data"
        mariadb-install-db --no-defaults --datadir="$data" --user=root --auth-root-authentication-method=socket \
            --skip-test-db >"$DIR/log/mariadb-install.log" 2>&1 ||
            die "could not create the accounting database; see $DIR/log/mariadb-install.log"
    fi
    start mariadbd mariadbd --no-defaults --datadir="$data" --user=root --socket="$sock" \
        --bind-address=127.0.0.1 --port="$DB_PORT" --pid-file="$DIR/run/mariadbd.daemon.pid" \
        --log-error="$DIR/log/mariadbd.log" --skip-name-resolve --innodb-buffer-pool-size=32M
    wait_for mariadbd "mariadbd (port $DB_PORT)" "$DIR/log/mariadbd.log" mariadb-admin --no-defaults --socket="$sock" ping
    mariadb --no-defaults --socket="$sock" -u root -e "
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
        die "could not create the database user slurm; see $DIR/log/mariadbd.log"
}

up() {
    local accounting=yes
    case "${1:-}" in
        "") ;;
        --no-accounting) accounting=no ;;
        *) die "unknown option '$1' for up (the one option: --no-accounting)" ;;
    esac
    mkdir -p "$DIR"/{etc,run,log,state/ctld,state/d}
    chmod 755 "$DIR"
    if alive slurmctld && alive slurmd; then
        if [ "$(cat "$DIR/mode" 2>/dev/null)" = "$accounting" ]; then
            say "already up (accounting: $accounting)"
            echo "export SLURM_CONF=$CONF"
            return 0
        fi
        say "up with accounting: $(cat "$DIR/mode" 2>/dev/null); restarting with accounting: $accounting"
        down
    fi
    down quietly  # whatever is left of a half-started cluster
    install_missing "$accounting"
    local t0; t0=$(now)
    write_config "$accounting"
    echo "$accounting" >"$DIR/mode"
    export SLURM_CONF="$CONF"
    # munge: its own key, socket and logs here (/etc/munge is not used)
    [ -f "$DIR/etc/munge.key" ] || (umask 077 && dd if=/dev/urandom of="$DIR/etc/munge.key" bs=1024 count=1 2>/dev/null)
    start munged munged --foreground --force --key-file="$DIR/etc/munge.key" --socket="$DIR/run/munge.socket" \
        --pid-file="$DIR/run/munged.daemon.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/state/munge.seed"
    wait_for munged munged "$DIR/log/munged.log" bash -c "munge -n -S '$DIR/run/munge.socket' | unmunge -S '$DIR/run/munge.socket'"
    if [ "$accounting" = yes ]; then
        start_db
        start slurmdbd slurmdbd -D  # reads slurmdbd.conf beside $SLURM_CONF
        wait_for slurmdbd slurmdbd "$DIR/log/slurmdbd.log" sacctmgr -n show cluster
        # slurmctld refuses to start against a database that does not know its cluster
        sacctmgr -n -P show cluster format=cluster | grep -qx electrabench ||
            sacctmgr -i add cluster electrabench >>"$DIR/log/slurmdbd.out" 2>&1 ||
            die "could not register the cluster with slurmdbd; see $DIR/log/slurmdbd.log"
    fi
    start slurmctld slurmctld -D -i -f "$CONF"
    wait_for slurmctld slurmctld "$DIR/log/slurmctld.log" scontrol ping
    start slurmd slurmd -D -N "$(hostname -s)" -f "$CONF"
    wait_for slurmd "slurmd (node idle)" "$DIR/log/slurmd.log" bash -c "sinfo -h -o %T | grep -qx idle"
    if [ "$accounting" = yes ]; then
        wait_for slurmctld "the cluster's registration with slurmdbd" "$DIR/log/slurmctld.log" \
            bash -c "sacct -n -X -S now >/dev/null"
    fi
    say "up in $(elapsed "$t0") s (accounting: $accounting): $(sinfo -h -o '%P %D node(s), %c CPUs, %m MB, gres %G, time limit %l')"
    echo "export SLURM_CONF=$CONF"
}

down() {
    local quiet="${1:-}" name pid stopped=()
    if [ -f "$CONF" ] && alive slurmctld; then
        # jobs first: slurmstepd and the job's processes outlive slurmd
        local jobs; jobs=$(SLURM_CONF="$CONF" squeue -h -o %i 2>/dev/null || true)
        if [ -n "$jobs" ]; then
            SLURM_CONF="$CONF" scancel $jobs 2>/dev/null || true
            for _ in $(seq 1 200); do
                [ -z "$(SLURM_CONF="$CONF" squeue -h -o %i 2>/dev/null)" ] && break
                sleep 0.2
            done
        fi
    fi
    for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do
        name=${DAEMONS[i]}
        pid=$(pid_of "$name")
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
            stopped+=("$name")
        fi
        rm -f "$DIR/run/$name.pid"
    done
    [ -n "$quiet" ] && return 0
    if [ ${#stopped[@]} -eq 0 ]; then say "not running"; else say "stopped ${stopped[*]}"; fi
}

status() {
    local name any=no
    for name in "${DAEMONS[@]}"; do
        if alive "$name"; then echo "$name: running (pid $(pid_of "$name"))"; any=yes; else echo "$name: stopped"; fi
    done
    if [ "$any" = yes ] && [ -f "$CONF" ]; then
        echo "accounting: $(cat "$DIR/mode" 2>/dev/null)"
        SLURM_CONF="$CONF" sinfo 2>&1 || true
        echo "export SLURM_CONF=$CONF"
    fi
}

case "${1:-}" in
    up) shift; up "$@" ;;
    down) shift; [ $# -eq 0 ] || die "down takes no options"; down ;;
    status) status ;;
    *) die "usage: $0 up [--no-accounting] | down | status" ;;
esac
