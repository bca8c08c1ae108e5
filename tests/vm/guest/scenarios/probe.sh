# Used by run.sh to check that a KVM guest boots at all; asserts nothing.
echo "probe: $(nproc) CPUs"
