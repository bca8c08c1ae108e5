use super::*;

/// Two nodes' factors under load, local and remote apart, for the bit-for-bit tests.
fn loaded_factors() -> Contention {
    let mut q = Contention::idle(2);
    (q.local[0], q.remote[0], q.local[1], q.remote[1]) = (1.3, 1.7, 1.1, 2.9);
    q
}

#[test]
fn a_gathered_demand_costs_what_its_decomposition_does() {
    // In order and out of order, local and remote, under loaded factors: the gathered
    // copy's time has the same bits and picks the same slope coefficients.
    let q = loaded_factors();
    for t in [in_order(), out_of_order()] {
        let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 1, 1 << 30)];
        let ops: Vec<LinearOp> = [(0, 3.0, 8.0, 64.0), (1, 300.0, 8.0, 8.0)]
            .iter()
            .map(|&(node, cycles, random, stream)| {
                linear_op(
                    &t,
                    &mixed_op(cycles, random, stream),
                    &regions,
                    node,
                    0.0,
                    &[],
                )
            })
            .collect();
        let refs: Vec<&LinearOp> = ops.iter().collect();
        let mut g = Gathered::default();
        g.gather(&refs);
        for (op, d) in ops.iter().zip(&g.demands) {
            let terms = &g.terms[d.start..d.end];
            let (ns, slopes) = op.ns_and_slopes(&q);
            let (gns, gslopes) = d.ns_and_slopes(terms, &q);
            assert_eq!(ns.to_bits(), gns.to_bits());
            for (t, &j) in terms.iter().zip(&op.nz) {
                let c = match gslopes {
                    None => 0.0,
                    Some(Slopes::Coef) => t.coef,
                    Some(Slopes::Stream) => t.stream_coef,
                };
                assert_eq!(c.to_bits(), slopes.map_or(0.0, |s| s[j]).to_bits());
            }
        }
    }
}

/// The decomposition memo hands out copies made by `copy_from`: a copy must equal its
/// source in every field, the one-node term included (the ninth and tenth speed passes
/// each kept the bytes alone, and together did not until `lone` was copied).
#[test]
fn a_copied_decomposition_equals_its_source() {
    for t in [in_order(), out_of_order()] {
        let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 1, 1 << 30)];
        let local = linear_op(&t, &stream_read_op(), &regions[..1], 0, 0.0, &[]);
        let both = linear_op(&t, &mixed_op(3.0, 8.0, 64.0), &regions, 1, 0.0, &[]);
        assert!(local.lone.is_some() && both.lone.is_none());
        // Into an empty one, and over one with other contents (the memo reuses buffers).
        for (src, over) in [(&local, &both), (&both, &local)] {
            let mut fresh = LinearOp::default();
            fresh.copy_from(src);
            assert_eq!(&fresh, src);
            let mut reused = over.clone();
            reused.copy_from(src);
            assert_eq!(&reused, src);
        }
    }
}

#[test]
fn a_solve_from_the_gathered_demands_has_the_bits_of_one_without() {
    // Runs of equal demands (whose quotients a step adds again), demands on two nodes
    // (no lone term), local and remote, in order and out of order: the factors and the
    // iterations are the same bits, gathered or not.
    for t in [in_order(), out_of_order()] {
        let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 1, 1 << 30)];
        let local = linear_op(&t, &stream_read_op(), &regions[..1], 0, 0.0, &[]);
        let remote = linear_op(&t, &random_op(), &regions[..1], 1, 1e6, &[]);
        let both = linear_op(&t, &mixed_op(3.0, 8.0, 64.0), &regions, 1, 0.0, &[]);
        assert!(local.lone.is_some() && remote.lone.is_some() && both.lone.is_none());
        let mut demands = Vec::new();
        for i in 0..40 {
            demands.extend([&local, &local, &both]);
            demands.extend(std::iter::repeat_n(&remote, i % 3));
        }
        let mut results = Vec::new();
        for gather in [false, true] {
            let mut q = Contention::idle(2);
            let mut buf = SolveBuffers::default();
            let it = solve_nodes_with(&t, &demands, &[0, 1], &mut q, &mut buf, gather);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            results.push((it, bits(&q.local), bits(&q.remote)));
        }
        assert!(results[0].0 > 1, "several Newton steps");
        assert_eq!(results[0], results[1]);
    }
}

#[test]
fn a_lone_term_times_an_operation_as_the_vectors_do() {
    // The inline copy of a one-node decomposition gives its time and slopes the bits the
    // vectors give.
    let q = loaded_factors();
    for t in [in_order(), out_of_order()] {
        // Both regions on node 0: one node, read locally or from node 1.
        let regions = [region_on(&t, 0, 1 << 30), region_on(&t, 0, 1 << 20)];
        for (node, op) in [
            (0, stream_read_op()),
            (1, random_op()),
            (1, mixed_op(300.0, 8.0, 8.0)),
        ] {
            let lone = linear_op(&t, &op, &regions, node, 1e6, &[]);
            assert!(lone.lone.is_some());
            let mut plain = lone.clone();
            plain.lone = None;
            let ((a, sa), (b, sb)) = (lone.ns_and_slopes(&q), plain.ns_and_slopes(&q));
            assert_eq!(a.to_bits(), b.to_bits());
            assert_eq!(sa, sb);
        }
    }
}

#[test]
fn a_component_solved_alone_equals_the_machine_wide_solve() {
    // Node 0's memory is read from both nodes, node 1's only from node 1: two components
    // once node 1's demand is local only. Solving node 0's component alone from idle gives
    // the same factors (to the solver's tolerance) as solving the machine, and leaves node
    // 1's factors as they were.
    let t = machine();
    let (r0, r1) = ([region_on(&t, 0, 1 << 30)], [region_on(&t, 1, 1 << 30)]);
    let op = stream_read_op();
    let a = linear_op(&t, &op, &r0, 0, 0.0, &[]);
    let b = linear_op(&t, &op, &r0, 1, 0.0, &[]);
    let c = linear_op(&t, &op, &r1, 1, 0.0, &[]);
    assert_eq!(
        (a.nz.clone(), b.nz.clone(), c.nz.clone()),
        (vec![0], vec![0], vec![1])
    );
    let all = [&a, &b, &a, &c, &c];
    let (full, _) = solve_contention(&t, &all, &Contention::idle(2));
    let mut q = Contention::idle(2);
    q.local[1] = 7.0;
    let iters = solve_nodes_into(
        &t,
        &[&a, &b, &a],
        &[0],
        &mut q,
        &mut SolveBuffers::default(),
    );
    assert!(iters > 1);
    assert_eq!(q.local[1], 7.0, "outside the component nothing moves");
    for (x, y) in [(q.local[0], full.local[0]), (q.remote[0], full.remote[0])] {
        assert!((x - y).abs() < 1e-6 * y, "{x} vs {y}");
    }
    // A component that lost its last demand is idle.
    solve_nodes_into(&t, &[], &[0], &mut q, &mut SolveBuffers::default());
    assert_eq!((q.local[0], q.remote[0]), (1.0, 1.0));
}

#[test]
fn loaded_factor_shape() {
    assert_eq!(loaded_factor(0.0, 3.0), 1.0);
    assert!((loaded_factor(1.0, 3.0) - 3.0).abs() < 1e-12);
    assert!(loaded_factor(0.5, 3.0) < 1.2);
    assert!((loaded_factor(2.0, 3.0) - 6.0).abs() < 1e-12);
}
