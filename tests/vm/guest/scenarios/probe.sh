# shellcheck shell=sh disable=SC1091,SC2086,SC2034,SC2012,SC2317
# Used by run.sh to check that a KVM guest boots at all; asserts nothing.
echo "probe: $(nproc) CPUs"
