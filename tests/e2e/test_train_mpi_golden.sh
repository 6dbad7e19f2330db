# MPI ranks give the pinned bits (testdata/golden/train.sha256, made by the single-process trainer
# and held by every build, with or without MPI): the quickstart with Adam, tanh, weight decay and
# dropout on 3 ranks, and with trace "weights" and accumulation 4 on 2 ranks, one thread each.
# Skips (125) without MPI.
source "$(dirname "$0")/lib.sh"
[[ ${REPRUN_WITH_MPI:-} == ON ]] || skip "this build has no MPI (cmake -DREPRUN_MPI=ON with libopenmpi-dev)"
command -v mpirun >/dev/null || skip "no mpirun (apt-get install openmpi-bin)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pinned="$TD/golden/train.sha256"
golden() { # golden NAME DIR: DIR's logs have NAME's pinned digests
  for f in steps.jsonl evals.jsonl; do
    want=$(grep "  train/$1/$f\$" "$pinned" | cut -c1-64)
    [[ -n $want ]] || fail "no pinned digest for train/$1/$f"
    got=$(sha256sum <"$2/$f" | cut -c1-64)
    [[ $got == "$want" ]] || fail "$1 on ranks: $f digest $got, pinned $want"
  done
}
expect_rc 0 "$REPRUN" train "$EX/quickstart.json" -o "$T/adam" -q --ranks 3 --threads 1 --set optimizer.name=adam \
  --set optimizer.lr=0.002 --set optimizer.momentum=null --set optimizer.weight_decay=0.01 --set model.activation=tanh
golden quickstart-adam-tanh "$T/adam"
expect_rc 0 "$REPRUN" train "$EX/quickstart.json" -o "$T/plain" -q --ranks 2 --threads 1 --set training.accumulation=4
golden quickstart "$T/plain"
pass
