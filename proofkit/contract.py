"""The chapter contract as data: the headings a chapter must have, in order."""

#: Chapters with at least one differentiable input.
HEADINGS = ("Definition", "Jacobian", "Backward rule", "Numeric example 1", "Numeric example 2", "Cross-checks",
            "Verdict")
#: Chapters whose inputs are all non-differentiable (Shape, Floor): sections 3 to 6 become one argument.
HEADINGS_NO_GRADIENT = ("Definition", "Why there is no gradient", "Verdict")
#: Where the op has kinks, ties or jumps, this section comes before the verdict.
OPTIONAL_HEADINGS = ("Non-differentiable points",)
