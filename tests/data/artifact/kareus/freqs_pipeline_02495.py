[
[('forward', 1410), ('forward', 900), ('backward', 1410), ('forward', 1410), ('backward', 1410), ('forward', 1410), ('backward', 1410), ('forward', 1410), ('backward', 1410), ('forward', 1410), ('backward', 1410), ('forward', 1410), ('backward', 1410), ('forward', 1410), ('backward', 1020), ('backward', 1410)],
[('forward', 1410), ('backward', 1410), ('forward', 1260), ('backward', 1260), ('forward', 1260), ('backward', 1260), ('forward', 1260), ('backward', 1260), ('forward', 1260), ('backward', 1260), ('forward', 1260), ('backward', 1260), ('forward', 1260), ('backward', 1260), ('forward', 1410), ('backward', 1410)],
]
# Iteration 2495 cost change: 1.6686869833459568
# Iteration 2495 total cost: 2020.8429700808636
# Iteration 2495 total cost with P2P: 2760.8529700808635
